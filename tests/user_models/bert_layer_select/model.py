"""Probing a tiny BertModel: the caller picks which hidden layer to read with a per-call Python
int (layer), indexing the hidden_states tuple."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402


class LayerProbe(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)
        self.bert = BertModel(cfg)
        self.probe = nn.Linear(32, 5)

    def forward(self, input_ids, attention_mask, layer: int = -1):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        h = out.hidden_states[layer]
        return self.probe(h[:, 0])


def build():
    torch.manual_seed(0)
    return LayerProbe().eval()


def inputs(batch, seq_len=8):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return (ids, mask), {"layer": batch % 3}
