"""A video UNet block hands num_frames (a Python int from a constant dim) to its temporal layers.

Imitates diffusers/models/unets/unet_3d_condition.py: UNet3DConditionModel.forward
(num_frames = sample.shape[2], frames folded into the batch, emb.repeat_interleave(num_frames))
and diffusers/models/transformers/transformer_temporal.py: TransformerTemporalModel.forward
(batch_frames // num_frames, reshape to (batch, frames, ...), return_dict).
"""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class TransformerTemporalModelOutput:
    sample: torch.Tensor


class TransformerTemporalModel(nn.Module):
    def __init__(self, in_channels: int = 8, inner_dim: int = 8, norm_num_groups: int = 4):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups=norm_num_groups, num_channels=in_channels, eps=1e-6, affine=True)
        self.proj_in = nn.Linear(in_channels, inner_dim)
        self.attn = nn.MultiheadAttention(inner_dim, 2, batch_first=True)
        self.proj_out = nn.Linear(inner_dim, in_channels)

    def forward(self, hidden_states, encoder_hidden_states=None, timestep=None, num_frames: int = 1,
                return_dict: bool = True):
        batch_frames, channel, height, width = hidden_states.shape
        batch_size = batch_frames // num_frames

        residual = hidden_states
        hidden_states = hidden_states[None, :].reshape(batch_size, num_frames, channel, height, width)
        hidden_states = hidden_states.permute(0, 2, 1, 3, 4)
        hidden_states = self.norm(hidden_states)
        hidden_states = hidden_states.permute(0, 3, 4, 2, 1).reshape(batch_size * height * width, num_frames, channel)
        hidden_states = self.proj_in(hidden_states)
        hidden_states = hidden_states + self.attn(hidden_states, hidden_states, hidden_states, need_weights=False)[0]
        hidden_states = self.proj_out(hidden_states)
        hidden_states = (
            hidden_states[None, None, :]
            .reshape(batch_size, height, width, num_frames, channel)
            .permute(0, 3, 4, 1, 2)
            .contiguous()
        )
        hidden_states = hidden_states.reshape(batch_frames, channel, height, width)
        output = hidden_states + residual
        if not return_dict:
            return (output,)
        return TransformerTemporalModelOutput(sample=output)


class TinyUNet3D(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv_in = nn.Linear(4, channels)
        self.time_embedding = nn.Sequential(nn.Linear(1, channels), nn.SiLU())
        self.transformer_in = TransformerTemporalModel(channels, channels)
        self.conv_out = nn.Linear(channels, 4)

    def forward(self, sample, timestep):
        num_frames = sample.shape[2]
        emb = self.time_embedding(timestep.float().view(-1, 1))
        emb = emb.repeat_interleave(num_frames, dim=0, output_size=emb.shape[0] * num_frames)

        sample = sample.permute(0, 2, 1, 3, 4).reshape((sample.shape[0] * num_frames, -1) + sample.shape[3:])
        sample = self.conv_in(sample.permute(0, 2, 3, 1)).permute(0, 3, 1, 2) + emb[:, :, None, None]
        sample = self.transformer_in(sample, num_frames=num_frames, return_dict=False)[0]
        sample = self.conv_out(sample.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return sample[None, :].reshape((-1, num_frames) + sample.shape[1:]).permute(0, 2, 1, 3, 4)


def build():
    return TinyUNet3D().eval()


def inputs(batch: int):
    return (torch.randn(batch, 4, 3, 4, 4), torch.full((batch,), 10))
