"""Bottleneck self-attention over a fixed feature map with relative position logits.

Imitates timm/layers/bottleneck_attn.py: rel_logits_1d, PosEmbedRel.forward and
BottleneckAttn.forward (`_assert(H == self.pos_embed.height, '')`, the 1x1 conv qkv,
`torch.split(x, [dim_out_qk, dim_out_qk, dim_out_v], dim=1)`, reshapes by num_heads) with
timm/layers/trace_utils.py: _assert.
"""
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch import _assert


def rel_logits_1d(q, rel_k, permute_mask: List[int]):
    B, H, W, dim = q.shape
    x = (q @ rel_k.transpose(-1, -2))
    x = x.reshape(-1, W, 2 * W - 1)
    x_pad = F.pad(x, [0, 1]).flatten(1)
    x_pad = F.pad(x_pad, [0, W - 1])
    x_pad = x_pad.reshape(-1, W + 1, 2 * W - 1)
    x = x_pad[:, :W, W - 1:]
    x = x.reshape(B, H, 1, W, W).expand(-1, -1, H, -1, -1)
    return x.permute(permute_mask)


class PosEmbedRel(nn.Module):
    def __init__(self, feat_size: Tuple[int, int], dim_head: int, scale: float):
        super().__init__()
        self.height, self.width = feat_size
        self.dim_head = dim_head
        self.scale = scale
        self.height_rel = nn.Parameter(torch.randn(self.height * 2 - 1, dim_head) * scale)
        self.width_rel = nn.Parameter(torch.randn(self.width * 2 - 1, dim_head) * scale)

    def forward(self, q):
        B, HW, _ = q.shape
        q = q.reshape(B, self.height, self.width, -1)
        rel_logits_w = rel_logits_1d(q, self.width_rel, permute_mask=(0, 1, 3, 2, 4))
        q = q.transpose(1, 2)
        rel_logits_h = rel_logits_1d(q, self.height_rel, permute_mask=(0, 3, 1, 4, 2))
        rel_logits = rel_logits_h + rel_logits_w
        return rel_logits.reshape(B, HW, HW)


class BottleneckAttn(nn.Module):
    def __init__(self, dim: int = 16, feat_size=(4, 4), num_heads: int = 2, dim_head: int = 8):
        super().__init__()
        self.num_heads = num_heads
        self.dim_head_qk = dim_head
        self.dim_head_v = dim // num_heads
        self.dim_out_qk = num_heads * self.dim_head_qk
        self.dim_out_v = num_heads * self.dim_head_v
        self.scale = self.dim_head_qk ** -0.5
        self.scale_pos_embed = False
        self.qkv = nn.Conv2d(dim, self.dim_out_qk * 2 + self.dim_out_v, 1, bias=False)
        self.pos_embed = PosEmbedRel(feat_size, dim_head=self.dim_head_qk, scale=self.scale)
        self.pool = nn.Identity()

    def forward(self, x):
        B, C, H, W = x.shape
        _assert(H == self.pos_embed.height, '')
        _assert(W == self.pos_embed.width, '')

        x = self.qkv(x)  # B, (2 * dim_head_qk + dim_head_v) * num_heads, H, W
        q, k, v = torch.split(x, [self.dim_out_qk, self.dim_out_qk, self.dim_out_v], dim=1)
        q = q.reshape(B * self.num_heads, self.dim_head_qk, -1).transpose(-1, -2)
        k = k.reshape(B * self.num_heads, self.dim_head_qk, -1)  # no transpose, for q @ k
        v = v.reshape(B * self.num_heads, self.dim_head_v, -1).transpose(-1, -2)

        if self.scale_pos_embed:
            attn = (q @ k + self.pos_embed(q)) * self.scale
        else:
            attn = (q @ k) * self.scale + self.pos_embed(q)
        attn = attn.softmax(dim=-1)

        out = (attn @ v).transpose(-1, -2).reshape(B, self.dim_out_v, H, W)
        return self.pool(out)


def build():
    return BottleneckAttn().eval()


def inputs(batch: int):
    return (torch.randn(batch, 16, 4, 4),)
