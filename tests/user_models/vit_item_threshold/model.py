"""An image classifier on a tiny ViTModel (positions interpolated for any side) that softens its
logits when the batch's top confidence, read with .item(), is below a threshold."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import ViTConfig, ViTModel  # noqa: E402


class ConfidentViT(nn.Module):
    def __init__(self, threshold=0.5):
        super().__init__()
        cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64)
        self.vit = ViTModel(cfg, add_pooling_layer=False)
        self.head = nn.Linear(32, 10)
        self.threshold = threshold

    def forward(self, pixel_values):
        h = self.vit(pixel_values=pixel_values, interpolate_pos_encoding=True).last_hidden_state
        logits = self.head(h[:, 0])
        conf = logits.softmax(-1).max().item()
        if conf < self.threshold:
            logits = logits / 2.0
        return logits


def build():
    torch.manual_seed(0)
    return ConfidentViT().eval()


def inputs(batch, seq_len=32):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return {"pixel_values": torch.randn(batch, 3, seq_len, seq_len, generator=g)}
