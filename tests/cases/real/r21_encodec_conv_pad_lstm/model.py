"""EnCodec encoder front: padded strided Conv1d whose padding is computed with tensor buffers, then an LSTM.

Imitates transformers/models/encodec/modeling_encodec.py: EncodecConv1d (stride / kernel_size /
padding_total kept as int64 buffers, _get_extra_padding_for_conv1d, _pad1d with reflect padding,
forward), EncodecLSTM.forward and the start of EncodecEncoder.
"""
import math
from types import SimpleNamespace

import torch
from torch import nn


class EncodecConv1d(nn.Module):
    def __init__(self, config, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, dilation: int = 1):
        super().__init__()
        self.causal = config.use_causal_conv
        self.pad_mode = config.pad_mode
        self.norm_type = config.norm_type
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride, dilation=dilation)
        if self.norm_type == "time_group_norm":
            self.norm = nn.GroupNorm(1, out_channels)
        kernel_size = self.conv.kernel_size[0]
        stride = torch.tensor(self.conv.stride[0], dtype=torch.int64)
        dilation = self.conv.dilation[0]
        kernel_size = torch.tensor((kernel_size - 1) * dilation + 1, dtype=torch.int64)
        self.register_buffer("stride", stride, persistent=False)
        self.register_buffer("kernel_size", kernel_size, persistent=False)
        self.register_buffer("padding_total", kernel_size - stride, persistent=False)

    def _get_extra_padding_for_conv1d(self, hidden_states):
        length = hidden_states.shape[-1]
        n_frames = (length - self.kernel_size + self.padding_total) / self.stride + 1
        n_frames = torch.ceil(n_frames).to(torch.int64) - 1
        ideal_length = n_frames * self.stride + self.kernel_size - self.padding_total
        return ideal_length - length

    @staticmethod
    def _pad1d(hidden_states, paddings, mode: str = "zero", value: float = 0.0):
        length = hidden_states.shape[-1]
        padding_left, padding_right = paddings
        if mode != "reflect":
            return nn.functional.pad(hidden_states, paddings, mode, value)
        max_pad = max(padding_left, padding_right)
        extra_pad = 0
        if length <= max_pad:
            extra_pad = max_pad - length + 1
            hidden_states = nn.functional.pad(hidden_states, (0, extra_pad))
        padded = nn.functional.pad(hidden_states, paddings, mode, value)
        end = padded.shape[-1] - extra_pad
        return padded[..., :end]

    def forward(self, hidden_states):
        extra_padding = self._get_extra_padding_for_conv1d(hidden_states)
        if self.causal:
            hidden_states = self._pad1d(hidden_states, (self.padding_total, extra_padding), mode=self.pad_mode)
        else:
            padding_right = self.padding_total // 2
            padding_left = self.padding_total - padding_right
            hidden_states = self._pad1d(hidden_states, (padding_left, padding_right + extra_padding), mode=self.pad_mode)
        hidden_states = self.conv(hidden_states)
        if self.norm_type == "time_group_norm":
            hidden_states = self.norm(hidden_states)
        return hidden_states


class EncodecLSTM(nn.Module):
    def __init__(self, config, dimension: int):
        super().__init__()
        self.lstm = nn.LSTM(dimension, dimension, config.num_lstm_layers)

    def forward(self, hidden_states):
        hidden_states = hidden_states.permute(2, 0, 1)
        hidden_states = self.lstm(hidden_states)[0] + hidden_states
        hidden_states = hidden_states.permute(1, 2, 0)
        return hidden_states


class EncodecEncoderLite(nn.Module):
    def __init__(self):
        super().__init__()
        config = SimpleNamespace(use_causal_conv=True, pad_mode="reflect", norm_type="time_group_norm",
                                 num_lstm_layers=1)
        self.layers = nn.ModuleList([
            EncodecConv1d(config, 1, 8, kernel_size=7),
            nn.ELU(),
            EncodecConv1d(config, 8, 8, kernel_size=4, stride=2),
            EncodecLSTM(config, 8),
        ])

    def forward(self, input_values):
        hidden_states = input_values
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states


def build():
    return EncodecEncoderLite().eval()


def inputs(batch: int):
    return (torch.randn(2, 1, 20 + 3 * batch),)  # audio length 23, 26, 29, 32, 44, 71
