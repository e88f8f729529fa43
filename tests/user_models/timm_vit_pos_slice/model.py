"""Small images through timm's ViT blocks with the user's own patch embedding: the position table
is sliced to the number of patches, and interpolated when the image has more patches than it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

_libs.timm_shim()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from timm.models.vision_transformer import Block  # noqa: E402
from torch import nn  # noqa: E402


class TinyViT(nn.Module):
    def __init__(self, dim=32, patch=8):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.randn(1, 16, dim) * 0.02)  # 4 x 4 patches (32 x 32 images)
        self.blocks = nn.Sequential(*[Block(dim, num_heads=2, mlp_ratio=2.0) for _ in range(2)])
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        n = x.shape[1]
        if n > self.pos.shape[1]:
            pos = F.interpolate(self.pos.transpose(1, 2), size=n, mode="linear").transpose(1, 2)
        else:
            pos = self.pos[:, :n]
        x = self.blocks(x + pos)
        return self.head(x.mean(1))


def build():
    torch.manual_seed(0)
    return TinyViT().eval()


def inputs(batch, seq_len=32):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return (torch.randn(batch, 3, seq_len, seq_len, generator=g),)
