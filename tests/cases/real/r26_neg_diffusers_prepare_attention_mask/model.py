"""Cross-attention over a 4-D feature map with an encoder attention mask.

Imitates diffusers/models/attention_processor.py: Attention.prepare_attention_mask
(`current_length != target_length` padding, `attention_mask.shape[0] < batch_size * head_size`
repeat_interleave) and AttnProcessor2_0.__call__ (`input_ndim == 4` folding, the mask view to
(batch, heads, -1, key_len), `attn.residual_connection`, `rescale_output_factor`).
"""
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, query_dim: int = 8, cross_attention_dim: int = 12, heads: int = 2, dim_head: int = 4):
        super().__init__()
        self.heads = heads
        self.inner_dim = heads * dim_head
        self.spatial_norm = None
        self.group_norm = nn.GroupNorm(num_channels=query_dim, num_groups=2, eps=1e-5, affine=True)
        self.norm_cross = False
        self.norm_q = None
        self.norm_k = None
        self.residual_connection = True
        self.rescale_output_factor = 1.0
        self.to_q = nn.Linear(query_dim, self.inner_dim)
        self.to_k = nn.Linear(cross_attention_dim, self.inner_dim)
        self.to_v = nn.Linear(cross_attention_dim, self.inner_dim)
        self.to_out = nn.ModuleList([nn.Linear(self.inner_dim, query_dim), nn.Dropout(0.0)])

    def prepare_attention_mask(self, attention_mask, target_length: int, batch_size: int, out_dim: int = 3):
        head_size = self.heads
        if attention_mask is None:
            return attention_mask
        current_length: int = attention_mask.shape[-1]
        if current_length != target_length:
            attention_mask = F.pad(attention_mask, (0, target_length), value=0.0)
        if out_dim == 3:
            if attention_mask.shape[0] < batch_size * head_size:
                attention_mask = attention_mask.repeat_interleave(
                    head_size, dim=0, output_size=attention_mask.shape[0] * head_size
                )
        elif out_dim == 4:
            attention_mask = attention_mask.unsqueeze(1)
            attention_mask = attention_mask.repeat_interleave(head_size, dim=1, output_size=attention_mask.shape[1] * head_size)
        return attention_mask

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None):
        attn = self
        residual = hidden_states
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch_size, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch_size, channel, height * width).transpose(1, 2)
        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )
        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
            attention_mask = attention_mask.view(batch_size, attn.heads, -1, attention_mask.shape[-1])
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        hidden_states = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch_size, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        return hidden_states / attn.rescale_output_factor


def build():
    return Attention().eval()


def inputs(batch: int):
    mask = torch.zeros(batch, 1, 5)
    mask[:, :, 4] = -10000.0
    return (torch.randn(batch, 8, 3, 3), torch.randn(batch, 5, 12), mask)
