"""Denoising any-size images with a tiny diffusers UNet2DModel: the wrapper pads height and width
to a multiple of 8 when they are not one, and crops the output back."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from diffusers import UNet2DModel  # noqa: E402
from torch import nn  # noqa: E402


class AnySizeDenoiser(nn.Module):
    def __init__(self, multiple=8):
        super().__init__()
        self.unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                                block_out_channels=(16, 32), norm_num_groups=8, attention_head_dim=8,
                                down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                up_block_types=("AttnUpBlock2D", "UpBlock2D"))
        self.multiple = multiple

    def forward(self, sample, timestep):
        h, w = sample.shape[-2:]
        pad_h, pad_w = (-h) % self.multiple, (-w) % self.multiple
        if pad_h or pad_w:
            sample = F.pad(sample, (0, pad_w, 0, pad_h), mode="reflect")
        out = self.unet(sample, timestep).sample
        return out[..., :h, :w]


def build():
    torch.manual_seed(0)
    return AnySizeDenoiser().eval()


def inputs(batch, seq_len=16):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return {"sample": torch.randn(batch, 3, seq_len, seq_len, generator=g),
            "timestep": torch.randint(0, 1000, (batch,), generator=g)}
