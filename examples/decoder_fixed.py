"""``decoder.py`` without its compile hazards: the position comes from the cache's shape, the
sliding window is a mask (no branch), and nothing is read back into Python."""

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

    def forward(self, x, past_k, past_v):
        b, t, c = x.shape
        start_pos = past_k.shape[1]  # a size, so it stays symbolic
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        k = torch.cat([past_k, k], dim=1)
        v = torch.cat([past_v, v], dim=1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, k.shape[1], self.heads, -1).transpose(1, 2)
        v = v.view(b, v.shape[1], self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

        qpos = torch.arange(t, device=x.device) + start_pos
        kpos = torch.arange(k.shape[2], device=x.device)
        offset = qpos[:, None] - kpos[None, :]
        allowed = (offset >= 0) & (offset < self.window)  # the window as a mask, no branch
        attn = scores.masked_fill(~allowed, float("-inf")).softmax(-1)

        y = (attn @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.out(y)
        return x + self.mlp(self.norm2(x))


def build_decoder() -> nn.Module:
    torch.manual_seed(0)
    return DecoderBlock().eval()


def decoder_inputs(batch: int, seq_len: int = 5):
    x = torch.randn(batch, seq_len, 32)
    past_k = torch.randn(batch, seq_len, 32)
    past_v = torch.randn(batch, seq_len, 32)
    return (x, past_k, past_v)
