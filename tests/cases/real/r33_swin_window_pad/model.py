"""Swin stage on a variable-size patch grid: pad to a multiple of the window, partition, shift, un-pad.

Imitates transformers/models/swin/modeling_swin.py: window_partition, window_reverse,
SwinLayer.set_shift_and_window_size / get_attn_mask / maybe_pad / cyclic_shift / forward
(`if pad_values[3] > 0 or pad_values[5] > 0:` un-padding), SwinStage.forward (input_dimensions
tuple handed to each layer) and SwinEmbeddings (patch grid from the image size). The window
attention is a plain softmax attention instead of SwinAttention.
"""
from types import SimpleNamespace

import torch
from torch import nn


def window_partition(input_feature, window_size):
    batch_size, height, width, num_channels = input_feature.shape
    input_feature = input_feature.view(batch_size, height // window_size, window_size, width // window_size, window_size, num_channels)
    return input_feature.transpose(2, 3).contiguous().view(-1, window_size, window_size, num_channels)


def window_reverse(windows, window_size, height, width):
    num_channels = windows.shape[-1]
    windows = windows.view(-1, height // window_size, width // window_size, window_size, window_size, num_channels)
    return windows.transpose(2, 3).contiguous().view(-1, height, width, num_channels)


class SwinLayer(nn.Module):
    def __init__(self, config, dim: int, shift_size: int = 0):
        super().__init__()
        self.window_size = config.window_size
        self.shift_size = shift_size
        self.layernorm_before = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.mlp = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())

    def set_shift_and_window_size(self, input_resolution):
        if min(input_resolution) <= self.window_size:
            self.shift_size = 0
            self.window_size = min(input_resolution)

    def get_attn_mask(self, height: int, width: int, dtype, device):
        if self.shift_size <= 0:
            return None
        h_idx = torch.arange(height, device=device)
        w_idx = torch.arange(width, device=device)
        h_region = (h_idx >= height - self.window_size).long() + (h_idx >= height - self.shift_size).long()
        w_region = (w_idx >= width - self.window_size).long() + (w_idx >= width - self.shift_size).long()
        img_mask = (h_region[None, :, None, None] * 3 + w_region[None, None, :, None]).to(dtype)
        mask_windows = window_partition(img_mask, self.window_size)
        mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        return attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)

    def maybe_pad(self, hidden_states, height: int, width: int):
        pad_right = (self.window_size - width % self.window_size) % self.window_size
        pad_bottom = (self.window_size - height % self.window_size) % self.window_size
        pad_values = (0, 0, 0, pad_right, 0, pad_bottom)
        hidden_states = nn.functional.pad(hidden_states, pad_values)
        return hidden_states, pad_values

    def cyclic_shift(self, hidden_states, reverse: bool = False):
        if self.shift_size > 0:
            direction = 1 if reverse else -1
            hidden_states = torch.roll(hidden_states, shifts=(direction * self.shift_size, direction * self.shift_size), dims=(1, 2))
        return hidden_states

    def forward(self, hidden_states, input_dimensions, always_partition: bool = False):
        if not always_partition:
            self.set_shift_and_window_size(input_dimensions)
        height, width = input_dimensions
        batch_size, _, channels = hidden_states.size()
        shortcut = hidden_states
        hidden_states = self.layernorm_before(hidden_states)
        hidden_states = hidden_states.view(batch_size, height, width, channels)
        hidden_states, pad_values = self.maybe_pad(hidden_states, height, width)
        _, height_pad, width_pad, _ = hidden_states.shape
        windows = window_partition(self.cyclic_shift(hidden_states), self.window_size)
        windows = windows.view(-1, self.window_size * self.window_size, channels)
        attn_mask = self.get_attn_mask(height_pad, width_pad, dtype=hidden_states.dtype, device=windows.device)
        q, k, v = self.qkv(windows).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / channels**0.5
        if attn_mask is not None:
            scores = scores.view(-1, attn_mask.shape[0], *scores.shape[1:]) + attn_mask[None]
            scores = scores.view(-1, *scores.shape[2:])
        attention_output = scores.softmax(-1) @ v
        attention_windows = attention_output.view(-1, self.window_size, self.window_size, channels)
        attention_windows = self.cyclic_shift(window_reverse(attention_windows, self.window_size, height_pad, width_pad), reverse=True)
        if pad_values[3] > 0 or pad_values[5] > 0:
            attention_windows = attention_windows[:, :height, :width, :].contiguous()
        attention_windows = attention_windows.view(batch_size, height * width, channels)
        hidden_states = shortcut + attention_windows
        return hidden_states + self.mlp(hidden_states)


class SwinStageModel(nn.Module):
    def __init__(self):
        super().__init__()
        config = SimpleNamespace(window_size=4, patch_size=2, embed_dim=8)
        self.config = config
        self.patch_embeddings = nn.Linear(3 * config.patch_size**2, config.embed_dim)
        self.blocks = nn.ModuleList([SwinLayer(config, 8, shift_size=0), SwinLayer(config, 8, shift_size=2)])

    def forward(self, pixel_values):
        batch_size, num_channels, height, width = pixel_values.shape
        p = self.config.patch_size
        x = pixel_values.reshape(batch_size, num_channels, height // p, p, width // p, p).permute(0, 2, 4, 1, 3, 5)
        embeddings = self.patch_embeddings(x.flatten(3)).flatten(1, 2)
        input_dimensions = (height // p, width // p)
        for layer_module in self.blocks:
            embeddings = layer_module(embeddings, input_dimensions)
        return embeddings


def build():
    return SwinStageModel().eval()


def inputs(batch: int):
    side = 2 * (batch + 4)  # patch grid 5, 6, 7, 8, 12, 21: multiples of the window (8, 12) and not
    return (torch.randn(2, 3, side, side),)
