"""A timm resnet18 classifier that adds a per-class calibration bias, picked row by row from the
predicted labels read back with .tolist()."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

_libs.timm_shim()
import timm  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


class Calibrated(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = timm.create_model("resnet18", pretrained=False, num_classes=4)
        self.class_bias = nn.Parameter(torch.randn(4, 4) * 0.1)

    def forward(self, x):
        logits = self.net(x)
        labels = logits.argmax(-1).tolist()
        bias = torch.stack([self.class_bias[i] for i in labels])
        return logits + bias


def build():
    torch.manual_seed(0)
    return Calibrated().eval()


def inputs(batch, seq_len=32):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return (torch.randn(batch, 3, seq_len, seq_len, generator=g),)
