"""Attention front-end that filters cross_attention_kwargs and warns about the ones it drops.

Imitates diffusers/models/attention_processor.py: Attention.forward (inspect.signature of the
processor, the `unused_kwargs` list, `logger.warning(f"cross_attention_kwargs {unused_kwargs} are
not expected ...")`) and AttnProcessor2_0.__call__ (simplified), plus transformers-style
`logger.warning_once` (transformers/utils/logging.py: warning_once, an lru_cache'd Logger method)
for output_attentions.
"""
import functools
import inspect
import logging

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("r19_diffusers_attention")


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once


class AttnProcessor2_0:
    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, temb=None):
        batch_size, sequence_length, _ = hidden_states.shape
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        head_dim = query.shape[-1] // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        hidden_states = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        return attn.to_out(hidden_states)


class Attention(nn.Module):
    def __init__(self, query_dim: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(query_dim, query_dim)
        self.to_k = nn.Linear(query_dim, query_dim)
        self.to_v = nn.Linear(query_dim, query_dim)
        self.to_out = nn.Linear(query_dim, query_dim)
        self.processor = AttnProcessor2_0()

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None, output_attentions=False,
                **cross_attention_kwargs):
        if output_attentions:
            logger.warning_once("AttnProcessor2_0 does not return attention weights; output_attentions is ignored.")
        attn_parameters = set(inspect.signature(self.processor.__call__).parameters.keys())
        quiet_attn_parameters = {"ip_adapter_masks", "ip_hidden_states"}
        unused_kwargs = [
            k for k, _ in cross_attention_kwargs.items() if k not in attn_parameters and k not in quiet_attn_parameters
        ]
        if len(unused_kwargs) > 0:
            logger.warning(
                f"cross_attention_kwargs {unused_kwargs} are not expected by {self.processor.__class__.__name__} and will be ignored."
            )
        cross_attention_kwargs = {k: w for k, w in cross_attention_kwargs.items() if k in attn_parameters}
        return self.processor(self, hidden_states, encoder_hidden_states=encoder_hidden_states,
                              attention_mask=attention_mask, **cross_attention_kwargs)


def build():
    return Attention().eval()


def inputs(batch: int):
    # an old pipeline still passes the LoRA scale through cross_attention_kwargs, and asks for attentions
    return ((torch.randn(batch, 6, 16),), {"output_attentions": True, "scale": 0.5})
