"""GPT-2 attention: fused qkv projection through Conv1D, split into q/k/v, causal eager attention.

Imitates transformers/pytorch_utils.py: Conv1D.forward (`size_out = x.size()[:-1] + (self.nf,)`,
addmm on `x.view(-1, x.size(-1))`, view(size_out)) and transformers/models/gpt2/modeling_gpt2.py:
GPT2Attention.forward (`self.c_attn(hidden_states).split(self.split_size, dim=2)`,
`shape_kv = (*key_states.shape[:-1], -1, self.head_dim)`, `if is_cross_attention`) with the eager
attention and the causal `bias` buffer slice `self.bias[:, :, key_length - query_length : key_length, :key_length]`
of the GPT-2 implementation.
"""
import torch
from torch import nn


class Conv1D(nn.Module):
    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.nf = nf
        self.nx = nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class GPT2Attention(nn.Module):
    def __init__(self, embed_dim: int = 16, num_heads: int = 2, max_positions: int = 32, is_cross_attention: bool = False):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.split_size = embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(f"`embed_dim` must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`: {self.num_heads}).")
        self.scale_attn_weights = True
        self.register_buffer("bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(1, 1, max_positions, max_positions), persistent=False)
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None):
        is_cross_attention = encoder_hidden_states is not None
        if is_cross_attention:
            raise ValueError("cross attention needs q_attn")
        query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)
        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)
        attn_output, attn_weights = self._attn(query_states, key_states, value_states, attention_mask)
        attn_output = attn_output.transpose(1, 2).reshape(*attn_output.shape[:-3], -1, self.embed_dim).contiguous()
        return self.c_proj(attn_output)


def build():
    return GPT2Attention().eval()


def inputs(batch: int):
    return (torch.randn(batch, 7, 16),)
