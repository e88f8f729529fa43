"""A review classifier around a tiny BertModel (issue 20's example): it trims the batch's padding
to its longest row, then caps the encoder's output at ``max_tokens`` positions."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (transformers from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402


class ReviewClassifier(nn.Module):
    def __init__(self, max_tokens: int = 32):
        super().__init__()
        cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)
        self.encoder = BertModel(cfg)
        self.max_tokens = max_tokens
        self.head = nn.Linear(32, 2)

    def forward(self, input_ids, attention_mask):
        longest = int(attention_mask.sum(1).max())  # trim the batch's padding
        input_ids = input_ids[:, :longest]
        attention_mask = attention_mask[:, :longest]
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if hidden.shape[1] > self.max_tokens:
            hidden = hidden[:, : self.max_tokens]
        return self.head(hidden.mean(1))


def build():
    torch.manual_seed(0)
    return ReviewClassifier().eval()


def inputs(batch, seq_len=40):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": mask}
