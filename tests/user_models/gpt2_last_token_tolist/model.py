"""Sequence classification on a tiny GPT2Model with right padding: the last real token of each
row is found from the mask, read back as Python ints with .tolist(), and gathered row by row."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import GPT2Config, GPT2Model  # noqa: E402


class LastTokenClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt2 = GPT2Model(GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                   bos_token_id=1, eos_token_id=2))
        self.score = nn.Linear(32, 3)

    def forward(self, input_ids, attention_mask):
        h = self.gpt2(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        last = (attention_mask.sum(1) - 1).tolist()
        pooled = torch.stack([h[row, idx] for row, idx in enumerate(last)])
        return self.score(pooled)


def build():
    torch.manual_seed(0)
    return LastTokenClassifier().eval()


def inputs(batch, seq_len=8):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": mask}
