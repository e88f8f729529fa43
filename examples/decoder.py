"""A small decoder block with a KV cache, written the way many models are: correct, but under
torch.compile it recompiles and graph-breaks. ``decoder_fixed.py`` is the same block fixed.

    shapelint check examples/        # predicts the hazards, without torch
    shapelint run                    # replays the targets in shapelint.toml and confirms them
"""

import math

import torch
from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, window: int = 8):
        super().__init__()
        self.heads = heads
        self.window = window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.last_peak = 0.0

    def forward(self, x, past_k, past_v, start_pos: int):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        k = torch.cat([past_k, k], dim=1)  # the KV cache: keys/values of earlier tokens
        v = torch.cat([past_v, v], dim=1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, k.shape[1], self.heads, -1).transpose(1, 2)
        v = v.view(b, v.shape[1], self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

        qpos = torch.arange(t, device=x.device) + start_pos  # hazard: a Python int position (SL301)
        kpos = torch.arange(k.shape[2], device=x.device)
        allowed = kpos[None, :] <= qpos[:, None]
        if t > self.window:  # hazard: a branch on the sequence length (SL101)
            allowed = allowed & (qpos[:, None] - kpos[None, :] < self.window)
        attn = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        self.last_peak = attn.amax().item()  # hazard: reads a value into Python (SL202)

        y = (attn @ v).transpose(1, 2).reshape(b, t, c)  # hazard: b, t crossed the break (SL104)
        x = x + self.out(y)
        return x + self.mlp(self.norm2(x))


def build_decoder() -> nn.Module:
    torch.manual_seed(0)
    return DecoderBlock().eval()


def decoder_inputs(batch: int, seq_len: int = 5):
    """A chunk of ``seq_len`` new tokens after a cached prefix of the same length."""
    x = torch.randn(batch, seq_len, 32)
    past_k = torch.randn(batch, seq_len, 32)
    past_v = torch.randn(batch, seq_len, 32)
    return (x, past_k, past_v, seq_len)
