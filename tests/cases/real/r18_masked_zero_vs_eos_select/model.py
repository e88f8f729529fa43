"""Zero padded frames with a boolean-mask assignment, pool the <eos> tokens with a boolean-mask read.

Imitates transformers/models/wav2vec2/modeling_wav2vec2.py: Wav2Vec2Encoder.forward
(`hidden_states[~expand_attention_mask] = 0`) and
transformers/models/bart/modeling_bart.py: BartForSequenceClassification.forward
(`selected = hidden_states[eos_mask, :]` with torch_compilable_check, simplified from
transformers/utils/import_utils.py: torch_compilable_check, without the env-var switch).
"""
from types import SimpleNamespace

import torch
from torch import nn


def torch_compilable_check(cond, msg):
    if torch.compiler.is_compiling():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return
    if not cond:
        raise ValueError(msg)


class Encoder(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim)) for _ in range(2))

    def forward(self, hidden_states, attention_mask=None):
        if attention_mask is not None:
            # make sure padded tokens output 0
            expand_attention_mask = attention_mask.unsqueeze(-1).repeat(1, 1, hidden_states.shape[2])
            hidden_states[~expand_attention_mask] = 0
        for layer in self.layers:
            hidden_states = hidden_states + layer(hidden_states)
        return hidden_states


class BartForSequenceClassification(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(eos_token_id=2, vocab_size=30, d_model=16, num_labels=3)
        self.embed = nn.Embedding(self.config.vocab_size, self.config.d_model)
        self.encoder = Encoder(self.config.d_model)
        self.classification_head = nn.Linear(self.config.d_model, self.config.num_labels)

    def forward(self, input_ids, attention_mask):
        hidden_states = self.encoder(self.embed(input_ids), attention_mask=attention_mask.bool())
        eos_mask = input_ids.eq(self.config.eos_token_id).to(hidden_states.device)
        selected = hidden_states[eos_mask, :]
        torch_compilable_check(
            selected.shape[0] // hidden_states.shape[0] >= 1, "Each example must contain at least one <eos> token."
        )
        sentence_representation = selected.view(hidden_states.size(0), -1, hidden_states.size(-1))[:, -1, :]
        return self.classification_head(sentence_representation)


def build():
    return BartForSequenceClassification().eval()


def inputs(batch: int):
    ids = torch.randint(3, 30, (batch, 8))
    ids[:, 5] = 2  # one <eos> per row
    mask = torch.ones(batch, 8, dtype=torch.long)
    mask[:, 6:] = 0
    return (ids, mask)
