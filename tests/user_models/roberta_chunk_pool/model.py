"""Long-text scoring on a tiny RobertaModel: the states are max-pooled over fixed-size chunks,
with a Python loop over the chunk starts."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _libs  # noqa: E402  (library code from bench/_downloads)

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import RobertaConfig, RobertaModel  # noqa: E402


class ChunkPool(nn.Module):
    def __init__(self, chunk=4):
        super().__init__()
        cfg = RobertaConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=130, pad_token_id=1)
        self.roberta = RobertaModel(cfg, add_pooling_layer=False)
        self.chunk = chunk
        self.head = nn.Linear(32, 2)

    def forward(self, input_ids, attention_mask):
        h = self.roberta(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        pooled = []
        for start in range(0, h.shape[1], self.chunk):
            pooled.append(h[:, start: start + self.chunk].mean(1))
        return self.head(torch.stack(pooled, 1).max(1).values)


def build():
    torch.manual_seed(0)
    return ChunkPool().eval()


def inputs(batch, seq_len=8):
    ids, mask = _libs.padded_ids(batch, seq_len)
    return {"input_ids": ids + 2 * (1 - mask), "attention_mask": mask}
