"""Greedy decoding inside forward around a tiny GPT2LMHeadModel: the number of new tokens is a
per-call Python int argument (max_new_tokens), the loop is unrolled by the compiler."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


class Greedy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                             bos_token_id=1, eos_token_id=2))

    def forward(self, input_ids, max_new_tokens: int = 2):
        for _ in range(max_new_tokens):
            logits = self.lm(input_ids=input_ids).logits
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            input_ids = torch.cat([input_ids, nxt], dim=1)
        return input_ids


def build():
    torch.manual_seed(0)
    return Greedy().eval()


def inputs(batch, seq_len=5):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    ids = torch.randint(3, 128, (batch, seq_len), generator=g)
    return (ids,), {"max_new_tokens": 1 + batch % 3}
