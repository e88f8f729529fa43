"""SDPA attention wrapper that derives is_causal from the query length.

Imitates transformers/integrations/sdpa_attention.py: use_gqa_in_sdpa, repeat_kv and
sdpa_attention_forward (the `q_length == 1` decode special case and
`is_causal = q_length > 1 and attention_mask is None and is_causal`), called from a
LlamaAttention-like module.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger("r07_sdpa")


def repeat_kv(hidden_states, n_rep: int):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def use_gqa_in_sdpa(attention_mask, key, value) -> bool:
    return attention_mask is None and key.shape[-1] == value.shape[-1] <= 256


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                           is_causal=None, **kwargs):
    if kwargs.get("output_attentions", False):
        logger.warning("`sdpa` attention does not support `output_attentions=True`.")
    sdpa_kwargs = {}
    q_length = query.shape[2]
    if hasattr(module, "num_key_value_groups") and module.num_key_value_groups > 1:
        if use_gqa_in_sdpa(attention_mask, key, value):
            sdpa_kwargs["enable_gqa"] = True
        elif q_length == 1 and not torch.compiler.is_compiling():
            query = query.reshape(query.shape[0], key.shape[1], -1, query.shape[-1])
        else:
            key = repeat_kv(key, module.num_key_value_groups)
            value = repeat_kv(value, module.num_key_value_groups)
    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    is_causal = q_length > 1 and attention_mask is None and is_causal
    if attention_mask is not None or is_causal:
        attn_bias = None if is_causal else attention_mask[:, :, :, : key.shape[-2]]
    else:
        attn_bias = None
    attn_output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_bias, dropout_p=dropout, scale=scaling, is_causal=is_causal, **sdpa_kwargs
    )
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, None


class Attention(nn.Module):
    def __init__(self, hidden_size: int = 32, heads: int = 4, kv_heads: int = 2):
        super().__init__()
        self.head_dim = hidden_size // heads
        self.num_key_value_groups = heads // kv_heads
        self.scaling = self.head_dim**-0.5
        self.is_causal = True
        self.q_proj = nn.Linear(hidden_size, heads * self.head_dim)
        self.k_proj = nn.Linear(hidden_size, kv_heads * self.head_dim)
        self.v_proj = nn.Linear(hidden_size, kv_heads * self.head_dim)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden_size)

    def forward(self, hidden_states, attention_mask=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        out, _ = sdpa_attention_forward(self, q, k, v, attention_mask, scaling=self.scaling)
        return self.o_proj(out.reshape(*input_shape, -1))


def build():
    return Attention().eval()


def inputs(batch: int):
    return (torch.randn(2, batch, 32),)
