"""Patch embedding for variable-size images that checks divisibility by the patch size.

Imitates timm/layers/patch_embed.py: PatchEmbedWithSize.forward (the
`_assert(H % self.patch_size[0] == 0, f"Input image height ({H}) ...")` checks, proj, flatten,
feat_size) with timm/layers/trace_utils.py: _assert (torch._assert). The width check is written
with a plain `assert cond, f"..."` as older timm/transformers code does.
"""
from typing import List, Tuple

import torch
from torch import nn

try:
    from torch import _assert
except ImportError:
    def _assert(condition: bool, message: str):
        assert condition, message


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


class PatchEmbedWithSize(nn.Module):
    def __init__(self, img_size: int = 16, patch_size: int = 4, in_chans: int = 3, embed_dim: int = 16,
                 flatten: bool = True):
        super().__init__()
        self.patch_size = to_2tuple(patch_size)
        self.img_size = to_2tuple(img_size)
        self.grid_size = tuple(s // p for s, p in zip(self.img_size, self.patch_size))
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.flatten = flatten
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x) -> Tuple[torch.Tensor, List[int]]:
        B, C, H, W = x.shape
        if self.img_size is not None:
            _assert(H % self.patch_size[0] == 0, f"Input image height ({H}) must be divisible by patch size ({self.patch_size[0]}).")
            assert W % self.patch_size[1] == 0, f"Input image width ({W}) must be divisible by patch size ({self.patch_size[1]})."

        x = self.proj(x)
        feat_size = x.shape[-2:]
        if self.flatten:
            x = x.flatten(2).transpose(1, 2)  # NCHW -> NLC
        x = self.norm(x)
        return x, feat_size


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = PatchEmbedWithSize()
        self.blocks = nn.Sequential(nn.Linear(16, 16), nn.GELU())

    def forward(self, x):
        x, feat_size = self.patch_embed(x)
        x = self.blocks(x)
        return x.transpose(1, 2).reshape(x.shape[0], -1, feat_size[0], feat_size[1])


def build():
    return Encoder().eval()


def inputs(batch: int):
    # height and width both vary (and differ, so they get separate symbols)
    return (torch.randn(2, 3, 4 * (batch + 1), 4 * (batch + 3)),)
