"""Chunked prefill on a tiny LlamaModel without a cache object: the caller passes how many tokens
came before (past_len, a Python int) and the wrapper builds the position ids from it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402,F401  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import LlamaConfig, LlamaModel  # noqa: E402


class ChunkEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
        self.llama = LlamaModel(cfg)

    def forward(self, input_ids, past_len: int = 0):
        t = input_ids.shape[1]
        position_ids = torch.arange(past_len, past_len + t, device=input_ids.device)[None]
        h = self.llama(input_ids=input_ids, position_ids=position_ids).last_hidden_state
        return h[:, -1]


def build():
    torch.manual_seed(0)
    return ChunkEncoder().eval()


def inputs(batch, seq_len=6):
    g = torch.Generator().manual_seed(1009 * batch + seq_len)
    return (torch.randint(3, 128, (batch, seq_len), generator=g),), {"past_len": 4 * (batch % 3)}
