"""Dynamic-NTK rotary embedding: frequencies recomputed when positions grow past the cached length.

Imitates transformers/modeling_rope_utils.py: dynamic_rope_update / dynamic_frequency_update
(`seq_len = torch.max(position_ids) + 1`, `if seq_len > max_seq_len_cached:` growth with
register_buffer, the reset branch) and _compute_dynamic_ntk_parameters, decorating
transformers/models/llama/modeling_llama.py: LlamaRotaryEmbedding.forward; plus apply_rotary_pos_emb.
"""
from functools import wraps
from types import SimpleNamespace

import torch
from torch import nn


def _compute_dynamic_ntk_parameters(config, device=None, seq_len=None):
    base = config.rope_theta
    dim = config.head_dim
    factor = config.factor
    if seq_len is None:
        seq_len = config.max_position_embeddings
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(config.max_position_embeddings, dtype=seq_len.dtype, device=seq_len.device))
    else:
        seq_len = max(seq_len, config.max_position_embeddings)
    base = base * ((factor * seq_len / config.max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, 1.0


def dynamic_rope_update(rope_forward):
    def dynamic_frequency_update(self, position_ids, device):
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.max_seq_len_cached:  # growth
            inv_freq, self.attention_scaling = _compute_dynamic_ntk_parameters(self.config, device, seq_len=seq_len)
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            self.max_seq_len_cached = seq_len
        if seq_len < self.original_max_seq_len and self.max_seq_len_cached > self.original_max_seq_len:  # reset
            self.original_inv_freq = self.original_inv_freq.to(device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)
            self.max_seq_len_cached = self.original_max_seq_len

    @wraps(rope_forward)
    def wrapper(self, x, position_ids):
        if "dynamic" in self.rope_type:
            dynamic_frequency_update(self, position_ids, device=x.device)
        return rope_forward(self, x, position_ids)

    return wrapper


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.rope_type = "dynamic"
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        inv_freq, self.attention_scaling = _compute_dynamic_ntk_parameters(config)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    @torch.no_grad()
    @dynamic_rope_update
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class RotaryQK(nn.Module):
    def __init__(self):
        super().__init__()
        config = SimpleNamespace(rope_theta=10000.0, head_dim=8, factor=2.0, max_position_embeddings=8)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, q, position_ids):
        cos, sin = self.rotary_emb(q, position_ids)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin


def build():
    return RotaryQK().eval()


def inputs(batch: int):
    seq = batch + 3  # 4, 5, 6, 7, 11, 20 positions: past the 8 cached positions from batch 8 on
    return (torch.randn(2, 2, seq, 8), torch.arange(seq).expand(2, seq))
