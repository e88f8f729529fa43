"""A tiny BertModel fed the tokenizer's lengths as a Python list: the attention mask is built in
Python from it, one row per length."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402


class ListMaskEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)
        self.bert = BertModel(cfg)
        self.head = nn.Linear(32, 2)

    def forward(self, input_ids, lengths):
        t = input_ids.shape[1]
        mask = torch.tensor([[1] * n + [0] * (t - n) for n in lengths], device=input_ids.device)
        h = self.bert(input_ids=input_ids, attention_mask=mask).last_hidden_state
        return self.head(h[:, 0])


def build():
    torch.manual_seed(0)
    return ListMaskEncoder().eval()


def inputs(batch, seq_len=8):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids, "lengths": mask.sum(1).tolist()}
