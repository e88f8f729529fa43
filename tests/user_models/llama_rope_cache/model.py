"""A retrieval head on a tiny LlamaModel: its own rotary attention pooling keeps a cos/sin table
and rebuilds it (and the int max_cached) when a longer sequence comes in."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import LlamaConfig, LlamaModel  # noqa: E402


class RotaryPool(nn.Module):
    def __init__(self, dim=32, max_cached=8):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)), persistent=False)
        self.query = nn.Parameter(torch.randn(dim))
        self._build(max_cached)

    def _build(self, n):
        t = torch.arange(n, device=self.inv_freq.device).float()[:, None] * self.inv_freq[None]
        self.register_buffer("cos", torch.cat([t.cos(), t.cos()], -1), persistent=False)
        self.register_buffer("sin", torch.cat([t.sin(), t.sin()], -1), persistent=False)
        self.max_cached = n

    def forward(self, x):
        seq_len = x.shape[1]
        if seq_len > self.max_cached:
            self._build(seq_len)
        cos, sin = self.cos[:seq_len], self.sin[:seq_len]
        x1, x2 = x.chunk(2, -1)
        x = x * cos + torch.cat([-x2, x1], -1) * sin
        return ((x @ self.query).softmax(-1)[..., None] * x).sum(1)


class Retriever(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
        self.llama = LlamaModel(cfg)
        self.pool = RotaryPool()

    def forward(self, input_ids, attention_mask):
        h = self.llama(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.pool(h)


def build():
    torch.manual_seed(0)
    return Retriever().eval()


def inputs(batch, seq_len=6):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": torch.ones_like(mask)}
