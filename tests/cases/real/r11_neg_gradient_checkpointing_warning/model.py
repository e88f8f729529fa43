"""Decoder stack with misconfiguration warnings that only fire in training.

Imitates transformers/models/gpt2/modeling_gpt2.py: GPT2Model.forward (the
`if self.gradient_checkpointing and self.training: if use_cache: logger.warning_once(...)`
block, the deprecated `head_mask` warning and the `input_ids and inputs_embeds` ValueError)
and transformers/utils/logging.py: warning_once.
"""
import functools
import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger("r11_gpt2")


@functools.lru_cache(None)
def warning_once(msg: str):
    logger.warning(msg)


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, hidden_states, use_cache: bool = False):
        out = hidden_states + self.mlp(self.ln(hidden_states))
        present = (out.detach(),) if use_cache else None
        return out, present


class GPT2Model(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, n_layer: int = 3, n_positions: int = 64):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(n_positions, dim)
        self.h = nn.ModuleList(Block(dim) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(dim)
        self.gradient_checkpointing = False

    def forward(self, input_ids=None, inputs_embeds=None, head_mask=None, use_cache=True):
        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("You cannot specify both input_ids and inputs_embeds at the same time")
        elif input_ids is not None:
            input_shape = input_ids.size()
            input_ids = input_ids.view(-1, input_shape[-1])
        elif inputs_embeds is not None:
            input_shape = inputs_embeds.size()[:-1]
        else:
            raise ValueError("You have to specify either input_ids or inputs_embeds")

        if self.gradient_checkpointing and self.training:
            if use_cache:
                warning_once(
                    "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`..."
                )
                use_cache = False

        if head_mask is not None:
            warnings.warn(f"`head_mask` is deprecated (got shape {tuple(head_mask.shape)}) and is ignored.", FutureWarning)

        if inputs_embeds is None:
            inputs_embeds = self.wte(input_ids)
        position_ids = torch.arange(input_shape[-1], dtype=torch.long).unsqueeze(0)
        hidden_states = inputs_embeds + self.wpe(position_ids)

        presents = () if use_cache else None
        for block in self.h:
            hidden_states, present = block(hidden_states, use_cache=use_cache)
            if use_cache:
                presents = presents + (present,)
        hidden_states = self.ln_f(hidden_states)
        if len(presents or ()) != len(self.h) and use_cache:
            logger.warning(f"expected {len(self.h)} cache entries, got {len(presents)}")
        return hidden_states, presents


def build():
    model = GPT2Model()
    model.gradient_checkpointing = True  # configured for training, but replayed in eval mode
    return model.eval()


def inputs(batch: int):
    return (torch.randint(0, 50, (batch, 6)),)
