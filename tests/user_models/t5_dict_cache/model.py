"""A tagger on a tiny T5EncoderModel that weights positions with a ramp, cached in a dict keyed by
the sequence length (built once per length, in forward)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import T5Config, T5EncoderModel  # noqa: E402


class RampTagger(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                       relative_attention_num_buckets=8)
        self.t5 = T5EncoderModel(cfg)
        self.head = nn.Linear(32, 3)
        self._ramps = {}

    def ramp(self, n):
        if n not in self._ramps:
            self._ramps[n] = torch.linspace(1.0, 2.0, n)
        return self._ramps[n]

    def forward(self, input_ids, attention_mask):
        h = self.t5(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        w = self.ramp(h.shape[1])
        return self.head((h * w[None, :, None]).sum(1))


def build():
    torch.manual_seed(0)
    return RampTagger().eval()


def inputs(batch, seq_len=6):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids, "attention_mask": mask}
