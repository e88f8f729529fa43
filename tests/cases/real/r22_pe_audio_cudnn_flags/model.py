"""Audio encoder front-end run under `torch.no_grad(), torch.backends.cudnn.flags(enabled=False)`.

Imitates transformers/models/pe_audio/modeling_pe_audio.py: Snake1d, PeAudioDacResidualUnit
(`padding = (hidden_state.shape[-1] - output_tensor.shape[-1]) // 2; if padding > 0:`),
PeAudioDacEncoderBlock, PeAudioDacEncoder and PeAudioEncoderEmbedder.forward (the cudnn.flags
context and the `padding_mask[:, :: hop_length]` subsampling).
"""
import math
from types import SimpleNamespace

import torch
from torch import nn


class Snake1d(nn.Module):
    def __init__(self, hidden_dim):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, hidden_dim, 1))

    def forward(self, hidden_states):
        shape = hidden_states.shape
        hidden_states = hidden_states.reshape(shape[0], shape[1], -1)
        hidden_states = hidden_states + (self.alpha + 1e-9).reciprocal() * torch.sin(self.alpha * hidden_states).pow(2)
        hidden_states = hidden_states.reshape(shape)
        return hidden_states


class PeAudioDacResidualUnit(nn.Module):
    def __init__(self, dimension: int = 16, dilation: int = 1):
        super().__init__()
        pad = ((7 - 1) * dilation) // 2
        self.snake1 = Snake1d(dimension)
        self.conv1 = nn.Conv1d(dimension, dimension, kernel_size=7, dilation=dilation, padding=pad)
        self.snake2 = Snake1d(dimension)
        self.conv2 = nn.Conv1d(dimension, dimension, kernel_size=1)

    def forward(self, hidden_state):
        output_tensor = hidden_state
        output_tensor = self.conv1(self.snake1(output_tensor))
        output_tensor = self.conv2(self.snake2(output_tensor))
        padding = (hidden_state.shape[-1] - output_tensor.shape[-1]) // 2
        if padding > 0:
            hidden_state = hidden_state[..., padding:-padding]
        output_tensor = hidden_state + output_tensor
        return output_tensor


class PeAudioDacEncoderBlock(nn.Module):
    def __init__(self, config, stride: int = 1, stride_index: int = 1):
        super().__init__()
        dimension = config.encoder_hidden_size * 2**stride_index
        self.res_unit1 = PeAudioDacResidualUnit(dimension // 2, dilation=1)
        self.res_unit2 = PeAudioDacResidualUnit(dimension // 2, dilation=3)
        self.snake1 = Snake1d(dimension // 2)
        self.conv1 = nn.Conv1d(dimension // 2, dimension, kernel_size=2 * stride, stride=stride, padding=math.ceil(stride / 2))

    def forward(self, hidden_state):
        hidden_state = self.res_unit1(hidden_state)
        hidden_state = self.snake1(self.res_unit2(hidden_state))
        return self.conv1(hidden_state)


class PeAudioDacEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.conv1 = nn.Conv1d(1, config.encoder_hidden_size, kernel_size=7, padding=3)
        self.block = nn.ModuleList(
            [PeAudioDacEncoderBlock(config, stride=stride, stride_index=i + 1) for i, stride in enumerate(config.downsampling_ratios)]
        )
        d_model = config.encoder_hidden_size * 2 ** len(config.downsampling_ratios)
        self.snake1 = Snake1d(d_model)
        self.conv2 = nn.Conv1d(d_model, config.hidden_size, kernel_size=3, padding=1)

    def forward(self, hidden_state):
        hidden_state = self.conv1(hidden_state)
        for module in self.block:
            hidden_state = module(hidden_state)
        hidden_state = self.snake1(hidden_state)
        return self.conv2(hidden_state)


class PeAudioEncoderEmbedder(nn.Module):
    def __init__(self):
        super().__init__()
        dac = SimpleNamespace(encoder_hidden_size=4, downsampling_ratios=[2], hidden_size=8, codebook_dim=4, hop_length=2)
        self.config = SimpleNamespace(dac_config=dac, hidden_size=16)
        self.dac_encoder = PeAudioDacEncoder(dac)
        self.bottleneck = nn.Conv1d(dac.hidden_size, dac.codebook_dim, 1)
        self.data_proj = nn.Linear(dac.codebook_dim, self.config.hidden_size)

    def forward(self, input_values, padding_mask=None):
        with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):
            hidden_states = self.dac_encoder(input_values)
            hidden_states = self.bottleneck(hidden_states)
        codec_features = hidden_states.transpose(1, 2)
        inputs_embeds = self.data_proj(codec_features)
        if padding_mask is not None:
            padding_mask = padding_mask[:, :: self.config.dac_config.hop_length]
        return inputs_embeds, padding_mask


def build():
    return PeAudioEncoderEmbedder().eval()


def inputs(batch: int):
    length = 16 + 2 * batch  # audio length 18, 20, 22, 24, 32, 50 (even, hop 2)
    return (torch.randn(2, 1, length), torch.ones(2, length, dtype=torch.long))
