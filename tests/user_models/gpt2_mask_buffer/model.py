"""Self-attention pooling over a tiny GPT2Model's states, with a causal-mask buffer that the
forward regrows when a longer sequence arrives (a cache keyed by length, on the module)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import GPT2Config, GPT2Model  # noqa: E402


class CausalPooler(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt2 = GPT2Model(GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                   bos_token_id=1, eos_token_id=2))
        self.register_buffer("mask", torch.tril(torch.ones(8, 8, dtype=torch.bool)), persistent=False)
        self.out = nn.Linear(32, 4)

    def forward(self, input_ids):
        h = self.gpt2(input_ids=input_ids).last_hidden_state
        t = h.shape[1]
        if t > self.mask.shape[0]:  # grow the cached mask
            self.mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=h.device))
        m = self.mask[:t, :t]
        scores = (h @ h.transpose(1, 2)).masked_fill(~m, float("-inf"))
        return self.out(scores.softmax(-1) @ h)


def build():
    torch.manual_seed(0)
    return CausalPooler().eval()


def inputs(batch, seq_len=8):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return {"input_ids": torch.randint(3, 128, (batch, seq_len), generator=g)}
