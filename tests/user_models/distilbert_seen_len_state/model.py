"""A streaming scorer on a tiny DistilBertModel that keeps a running mean of its states and
restarts it whenever the sequence length changes (the length it saw is an int on the module)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import DistilBertConfig, DistilBertModel  # noqa: E402


class StreamingScorer(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = DistilBertConfig(vocab_size=128, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                               max_position_embeddings=128)
        self.encoder = DistilBertModel(cfg)
        self.register_buffer("running", torch.zeros(32), persistent=False)
        self.seen_len = 0
        self.head = nn.Linear(32, 1)

    def forward(self, input_ids, attention_mask):
        h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if self.seen_len != h.shape[1]:  # a new length: restart the running mean
            self.running.zero_()
            self.seen_len = h.shape[1]
        self.running.mul_(0.9).add_(0.1 * h.mean((0, 1)))
        return self.head(h.mean(1) + self.running)


def build():
    torch.manual_seed(0)
    return StreamingScorer().eval()


def inputs(batch, seq_len=8):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": mask}
