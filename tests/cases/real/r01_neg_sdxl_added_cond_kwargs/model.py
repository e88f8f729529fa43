"""SDXL-style additional conditioning: time ids and pooled text embeds passed in a dict.

Imitates diffusers UNet2DConditionModel.get_aug_embed ("text_time" branch), get_time_embed and
diffusers.models.embeddings.get_timestep_embedding / Timesteps / TimestepEmbedding.
"""
import math
from types import SimpleNamespace
from typing import Any, Dict

import torch
from torch import nn


def get_timestep_embedding(timesteps, embedding_dim: int, flip_sin_to_cos: bool = False,
                           downscale_freq_shift: float = 1, scale: float = 1, max_period: int = 10000):
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"

    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
    exponent = exponent / (half_dim - downscale_freq_shift)

    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = scale * emb
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


class Timesteps(nn.Module):
    def __init__(self, num_channels: int, flip_sin_to_cos: bool, downscale_freq_shift: float):
        super().__init__()
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift

    def forward(self, timesteps):
        return get_timestep_embedding(timesteps, self.num_channels, flip_sin_to_cos=self.flip_sin_to_cos,
                                      downscale_freq_shift=self.downscale_freq_shift)


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels: int, time_embed_dim: int):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(time_embed_dim, time_embed_dim)

    def forward(self, sample):
        return self.linear_2(self.act(self.linear_1(sample)))


class AugEmbedUNetStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(addition_embed_type="text_time", addition_time_embed_dim=8,
                                      projection_class_embeddings_input_dim=32 + 6 * 8)
        self.time_proj = Timesteps(16, True, 0)
        self.time_embedding = TimestepEmbedding(16, 32)
        self.add_time_proj = Timesteps(self.config.addition_time_embed_dim, True, 0)
        self.add_embedding = TimestepEmbedding(self.config.projection_class_embeddings_input_dim, 32)
        self.conv_in = nn.Linear(4, 32)

    def get_aug_embed(self, emb, encoder_hidden_states, added_cond_kwargs: Dict[str, Any]):
        aug_emb = None
        if self.config.addition_embed_type == "text":
            aug_emb = self.add_embedding(encoder_hidden_states)
        elif self.config.addition_embed_type == "text_time":
            if "text_embeds" not in added_cond_kwargs:
                raise ValueError(
                    f"{self.__class__} has the config param `addition_embed_type` set to 'text_time' which requires the keyword argument `text_embeds` to be passed in `added_cond_kwargs`"
                )
            text_embeds = added_cond_kwargs.get("text_embeds")
            if "time_ids" not in added_cond_kwargs:
                raise ValueError(
                    f"{self.__class__} has the config param `addition_embed_type` set to 'text_time' which requires the keyword argument `time_ids` to be passed in `added_cond_kwargs`"
                )
            time_ids = added_cond_kwargs.get("time_ids")
            time_embeds = self.add_time_proj(time_ids.flatten())
            time_embeds = time_embeds.reshape((text_embeds.shape[0], -1))
            add_embeds = torch.concat([text_embeds, time_embeds], dim=-1)
            add_embeds = add_embeds.to(emb.dtype)
            aug_emb = self.add_embedding(add_embeds)
        return aug_emb

    def forward(self, sample, timestep, encoder_hidden_states, added_cond_kwargs=None):
        timesteps = timestep
        if len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(sample.device)
        timesteps = timesteps.expand(sample.shape[0])
        t_emb = self.time_proj(timesteps).to(dtype=sample.dtype)
        emb = self.time_embedding(t_emb)
        aug_emb = self.get_aug_embed(emb, encoder_hidden_states, added_cond_kwargs)
        emb = emb + aug_emb if aug_emb is not None else emb
        h = self.conv_in(sample)
        return h + emb[:, None, :] + encoder_hidden_states.mean(dim=1, keepdim=True)


def build():
    return AugEmbedUNetStem()


def inputs(batch: int):
    added = {"text_embeds": torch.randn(batch, 32), "time_ids": torch.randn(batch, 6)}
    return (torch.randn(batch, 5, 4), torch.tensor(999), torch.randn(batch, 7, 32), added)
