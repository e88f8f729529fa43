"""T5 self-attention with a relative position bias computed for the current query/key lengths.

Imitates transformers/models/t5/modeling_t5.py: T5Attention._relative_position_bucket
(`if bidirectional: num_buckets //= 2`, max_exact, `math.log(max_distance / max_exact)`,
torch.full_like), compute_bias (arange over query_length / key_length plus past_seen_tokens) and
forward (`if position_bias is None: key_length = key_states.shape[-2]`,
`if not self.has_relative_attention_bias`, eager attention with the bias added).
"""
import math

import torch
from torch import nn


class T5Attention(nn.Module):
    def __init__(self, d_model: int = 16, n_heads: int = 2, has_relative_attention_bias: bool = True,
                 num_buckets: int = 8, max_distance: int = 16, is_decoder: bool = False):
        super().__init__()
        self.is_decoder = is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = num_buckets
        self.relative_attention_max_distance = max_distance
        self.n_heads = n_heads
        self.key_value_proj_dim = d_model // n_heads
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)
        self.gradient_checkpointing = False

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device=None, past_seen_tokens=0):
        if device is None:
            device = self.relative_attention_bias.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None] + past_seen_tokens
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position,
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask=None, position_bias=None, past_key_values=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.key_value_proj_dim)
        past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
        query_states = self.q(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v(hidden_states).view(hidden_shape).transpose(1, 2)
        if position_bias is None:
            key_length = key_states.shape[-2]
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, input_shape[1], key_length), dtype=query_states.dtype)
                if self.gradient_checkpointing and self.training:
                    position_bias.requires_grad = True
            else:
                position_bias = self.compute_bias(input_shape[1], key_length, device=query_states.device,
                                                  past_seen_tokens=past_seen_tokens)
        scores = torch.matmul(query_states, key_states.transpose(3, 2)) + position_bias
        if mask is not None:
            scores = scores + mask
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2)
        attn_output = self.o(attn_output.reshape(*input_shape, -1).contiguous())
        return attn_output, position_bias


def build():
    return T5Attention().eval()


def inputs(batch: int):
    return (torch.randn(2, batch + 3, 16),)  # sequence length 4, 5, 6, 7, 11, 20
