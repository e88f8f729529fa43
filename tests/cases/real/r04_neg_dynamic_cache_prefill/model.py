"""Prefill through a DynamicCache-like Python object passed into forward.

Imitates transformers/cache_utils.py: DynamicLayer.lazy_initialization / update /
get_seq_length, DynamicCache.update / get_seq_length, and the cache_position / position_ids set-up
of transformers/models/llama/modeling_llama.py: LlamaModel.forward.
"""
import torch
from torch import nn


class DynamicLayer:
    def __init__(self):
        self.keys = None
        self.values = None
        self.is_initialized = False

    def lazy_initialization(self, key_states):
        self.dtype, self.device = key_states.dtype, key_states.device
        self.keys = torch.tensor([], dtype=self.dtype, device=self.device)
        self.values = torch.tensor([], dtype=self.dtype, device=self.device)
        self.is_initialized = True

    def update(self, key_states, value_states):
        if not self.is_initialized:
            self.lazy_initialization(key_states)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        if not self.is_initialized or self.keys.numel() == 0:
            return 0
        return self.keys.shape[-2]


class DynamicCache:
    def __init__(self, num_layers: int):
        self.layers = [DynamicLayer() for _ in range(num_layers)]

    def update(self, key_states, value_states, layer_idx: int):
        return self.layers[layer_idx].update(key_states, value_states)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        if layer_idx >= len(self.layers):
            return 0
        return self.layers[layer_idx].get_seq_length()


class Layer(nn.Module):
    def __init__(self, dim: int, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.q_proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, past_key_values=None):
        q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        if past_key_values is not None:
            k, v = past_key_values.update(k, v, self.layer_idx)
        attn = torch.softmax(q @ k.transpose(-1, -2) / k.shape[-1] ** 0.5, dim=-1)
        return hidden_states + attn @ v


class TinyDecoder(nn.Module):
    def __init__(self, dim: int = 16, num_layers: int = 2):
        super().__init__()
        self.embed_tokens = nn.Embedding(50, dim)
        self.layers = nn.ModuleList(Layer(dim, i) for i in range(num_layers))

    def forward(self, input_ids, past_key_values=None, use_cache: bool = True):
        inputs_embeds = self.embed_tokens(input_ids)
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache(len(self.layers))
        past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds + position_ids[..., None].float() * 0.01
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, past_key_values=past_key_values)
        return hidden_states, past_key_values


def build():
    return TinyDecoder()


def inputs(batch: int):
    return (torch.randint(0, 50, (batch, 5)), DynamicCache(2))
