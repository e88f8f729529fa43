"""Eager attention with the legacy shape checks that raise ValueError with an f-string.

Imitates transformers 4.3x transformers/models/llama/modeling_llama.py: LlamaAttention.forward
(the eager path with `if attn_weights.size() != (bsz, self.num_heads, q_len, kv_seq_len): raise
ValueError(f"...")` checks on the weights, the mask and the output) and
transformers/modeling_attn_mask_utils.py: _prepare_4d_causal_attention_mask (simplified).
"""
import math

import torch
from torch import nn


def _prepare_4d_causal_attention_mask(attention_mask, input_shape, dtype):
    bsz, tgt_len = input_shape
    min_value = torch.finfo(dtype).min
    causal = torch.full((tgt_len, tgt_len), min_value, dtype=dtype).triu(1)
    expanded = (1.0 - attention_mask[:, None, None, :].to(dtype)) * min_value
    return causal[None, None, :, :] + expanded


class LlamaAttention(nn.Module):
    def __init__(self, hidden_size: int = 32, num_heads: int = 4):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        if (self.head_dim * self.num_heads) != self.hidden_size:
            raise ValueError(
                f"hidden_size must be divisible by num_heads (got `hidden_size`: {self.hidden_size}"
                f" and `num_heads`: {self.num_heads})."
            )
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, attention_mask=None):
        bsz, q_len, _ = hidden_states.size()

        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        kv_seq_len = key_states.shape[-2]

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)

        if attn_weights.size() != (bsz, self.num_heads, q_len, kv_seq_len):
            raise ValueError(
                f"Attention weights should be of size {(bsz, self.num_heads, q_len, kv_seq_len)}, but is"
                f" {attn_weights.size()}"
            )

        if attention_mask is not None:
            if attention_mask.size() != (bsz, 1, q_len, kv_seq_len):
                raise ValueError(
                    f"Attention mask should be of size {(bsz, 1, q_len, kv_seq_len)}, but is {attention_mask.size()}"
                )
            attn_weights = attn_weights + attention_mask

        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)

        if attn_output.size() != (bsz, self.num_heads, q_len, self.head_dim):
            raise ValueError(
                f"`attn_output` should be of size {(bsz, self.num_heads, q_len, self.head_dim)}, but is"
                f" {attn_output.size()}"
            )

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = LlamaAttention()

    def forward(self, hidden_states, attention_mask):
        mask = _prepare_4d_causal_attention_mask(attention_mask, hidden_states.shape[:2], hidden_states.dtype)
        return self.attn(hidden_states, mask)


def build():
    return Model().eval()


def inputs(batch: int):
    seq = batch + 3
    return (torch.randn(2, seq, 32), torch.ones(2, seq, dtype=torch.long))
