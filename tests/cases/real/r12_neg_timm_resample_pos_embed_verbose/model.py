"""ViT with dynamic_img_size: the absolute position embedding is resampled in forward.

Imitates timm/layers/pos_embed.py: resample_abs_pos_embed (size-match early outs,
int(math.sqrt(...)) of the stored grid, the `verbose` logging tail) and
timm/models/vision_transformer.py: VisionTransformer._pos_embed (dynamic_img_size branch).
"""
import logging
import math
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import nn

_logger = logging.getLogger("r12_timm")


def resample_abs_pos_embed(posemb, new_size: List[int], old_size: Optional[List[int]] = None,
                           num_prefix_tokens: int = 1, interpolation: str = "bicubic", antialias: bool = True,
                           verbose: bool = False):
    num_pos_tokens = posemb.shape[1]
    num_new_tokens = new_size[0] * new_size[1] + num_prefix_tokens
    if not torch.compiler.is_exporting() and num_new_tokens == num_pos_tokens:
        if old_size is not None and old_size[0] == new_size[0] and old_size[1] == new_size[1]:
            return posemb
        if old_size is None and new_size[0] == new_size[1]:
            return posemb

    if old_size is None:
        hw = int(math.sqrt(num_pos_tokens - num_prefix_tokens))
        old_size = hw, hw

    if num_prefix_tokens:
        posemb_prefix, posemb = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    else:
        posemb_prefix, posemb = None, posemb

    embed_dim = posemb.shape[-1]
    orig_dtype = posemb.dtype
    posemb = posemb.float()
    posemb = posemb.reshape(1, old_size[0], old_size[1], -1).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode=interpolation, antialias=antialias)
    posemb = posemb.permute(0, 2, 3, 1).reshape(1, -1, embed_dim)
    posemb = posemb.to(orig_dtype)

    if posemb_prefix is not None:
        posemb = torch.cat([posemb_prefix, posemb], dim=1)

    if not torch.jit.is_scripting() and verbose:
        _logger.info(f"Resized position embedding: {old_size} to {new_size}.")
    return posemb


class VisionTransformerPosEmbed(nn.Module):
    def __init__(self, embed_dim: int = 16, trained_grid: int = 4, patch_size: int = 4):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(3 * patch_size * patch_size, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.reg_token = None
        self.num_prefix_tokens = 1
        self.no_embed_class = False
        self.dynamic_img_size = True
        self.pos_embed = nn.Parameter(torch.randn(1, trained_grid * trained_grid + 1, embed_dim) * 0.02)
        self.pos_drop = nn.Dropout(0.0)

    def _pos_embed(self, x):
        to_cat = []
        if self.cls_token is not None:
            to_cat.append(self.cls_token.expand(x.shape[0], -1, -1))
        if self.reg_token is not None:
            to_cat.append(self.reg_token.expand(x.shape[0], -1, -1))
        if self.dynamic_img_size:
            B, H, W, C = x.shape
            pos_embed = resample_abs_pos_embed(self.pos_embed, new_size=(H, W), old_size=None,
                                               num_prefix_tokens=0 if self.no_embed_class else self.num_prefix_tokens)
            x = x.view(B, -1, C)
        else:
            pos_embed = self.pos_embed
        if to_cat:
            x = torch.cat(to_cat + [x], dim=1)
        x = x + pos_embed
        return self.pos_drop(x)

    def forward(self, pixel_values):
        b, c, h, w = pixel_values.shape
        p = self.patch_size
        x = pixel_values.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).flatten(3)
        x = self.proj(x)  # NHWC
        return self._pos_embed(x)


def build():
    return VisionTransformerPosEmbed().eval()


def inputs(batch: int):
    return (torch.randn(batch, 3, 24, 24),)  # a 6x6 patch grid against a 4x4 trained grid
