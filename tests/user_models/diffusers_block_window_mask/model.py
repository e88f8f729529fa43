"""A sequence model on diffusers' BasicTransformerBlock that smooths the block's output with a
local-window mask built in Python (a loop over the positions)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
from diffusers.models.attention import BasicTransformerBlock  # noqa: E402
from torch import nn  # noqa: E402


class WindowSmoother(nn.Module):
    def __init__(self, dim=32, window=2):
        super().__init__()
        self.block = BasicTransformerBlock(dim, num_attention_heads=2, attention_head_dim=16)
        self.window = window
        self.out = nn.Linear(dim, dim)

    def local_mask(self, t):
        mask = torch.zeros(t, t)
        for i in range(t):
            mask[i, max(0, i - self.window): i + 1] = 1.0
        return mask

    def forward(self, tokens):
        h = self.block(tokens)
        mask = self.local_mask(h.shape[1])
        h = (mask @ h) / mask.sum(-1, keepdim=True)[None]
        return self.out(h)


def build():
    torch.manual_seed(0)
    return WindowSmoother().eval()


def inputs(batch, seq_len=6):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return (torch.randn(batch, seq_len, 32, generator=g),)
