"""Encoder forward driven by Python output flags that never change between calls.

Imitates transformers/models/bert/modeling_bert.py: BertEncoder.forward / BertModel.forward
(output_attentions, output_hidden_states, return_dict resolved against the config, tuple or
ModelOutput return) and transformers/utils/generic.py: ModelOutput.to_tuple.
"""
from dataclasses import dataclass, fields
from types import SimpleNamespace
from typing import Optional, Tuple

import torch
from torch import nn


@dataclass
class BaseModelOutput:
    last_hidden_state: torch.Tensor = None
    hidden_states: Optional[Tuple[torch.Tensor, ...]] = None
    attentions: Optional[Tuple[torch.Tensor, ...]] = None

    def to_tuple(self):
        return tuple(getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None)


class BertLayer(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.output = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, hidden_states, output_attentions: bool = False):
        attn_out, attn_weights = self.attention(hidden_states, hidden_states, hidden_states,
                                                need_weights=output_attentions)
        hidden_states = self.norm(hidden_states + self.output(attn_out))
        outputs = (hidden_states, attn_weights) if output_attentions else (hidden_states,)
        return outputs


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([BertLayer(config.hidden_size, config.num_heads) for _ in range(config.num_layers)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states, output_attentions=False, output_hidden_states=False, return_dict=True):
        all_hidden_states = () if output_hidden_states else None
        all_self_attentions = () if output_attentions else None
        for i, layer_module in enumerate(self.layer):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            layer_outputs = layer_module(hidden_states, output_attentions)
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_self_attentions = all_self_attentions + (layer_outputs[1],)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        if not return_dict:
            return tuple(v for v in [hidden_states, all_hidden_states, all_self_attentions] if v is not None)
        return BaseModelOutput(last_hidden_state=hidden_states, hidden_states=all_hidden_states,
                               attentions=all_self_attentions)


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.encoder = BertEncoder(config)

    def forward(self, input_ids, output_attentions=None, output_hidden_states=None, return_dict=None):
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict
        embedding_output = self.embeddings(input_ids)
        encoder_outputs = self.encoder(embedding_output, output_attentions=output_attentions,
                                       output_hidden_states=output_hidden_states, return_dict=return_dict)
        sequence_output = encoder_outputs[0] if not return_dict else encoder_outputs.last_hidden_state
        if not return_dict:
            return (sequence_output,) + encoder_outputs[1:]
        return encoder_outputs.to_tuple()


def build():
    config = SimpleNamespace(vocab_size=40, hidden_size=16, num_heads=2, num_layers=2, output_attentions=False,
                             output_hidden_states=True, use_return_dict=True)
    return BertModel(config).eval()


def inputs(batch: int):
    return (torch.randint(0, 40, (batch, 6)), None, None, False)
