"""Patch-token image features with an up-front check of the patch width.

Imitates transformers/models/neomme/modeling_neomme.py: NeoMMEModel.get_image_features
(`if pixel_values.shape[-1] != self.config.patch_dim: raise ValueError(f"...")`), the patch
embedding and NeoMMERMSNorm (with_scale=False), and get_placeholder_mask's shifted-ids
comparison (F.pad of input_ids, placeholder mask expanded to the feature width).
"""
from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class BaseModelOutputWithPooling:
    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor


class NeoMMERMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6, with_scale: bool = True):
        super().__init__()
        self.eps = eps
        self.with_scale = with_scale
        self.weight = nn.Parameter(torch.ones(hidden_size)) if with_scale else None

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        if self.with_scale:
            hidden_states = hidden_states * self.weight
        return hidden_states.to(input_dtype)


class NeoMMEPatchEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config.patch_dim, config.hidden_size)
        self.norm = NeoMMERMSNorm(config.hidden_size, config.norm_eps, with_scale=True)

    def forward(self, pixel_values):
        return self.norm(self.proj(pixel_values))


class NeoMMEImageFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(patch_size=2, patch_dim=12, hidden_size=16, norm_eps=1e-6, pad_token_id=0,
                                      image_token_id=5, document_token_id=3)
        self.patch_embeddings = NeoMMEPatchEmbeddings(self.config)

    def get_image_features(self, pixel_values):
        if pixel_values.shape[-1] != self.config.patch_dim:  # trf-ignore: TRF041
            raise ValueError(
                f"pixel_values has patch width {pixel_values.shape[-1]} but the model expects "
                f"{self.config.patch_dim} (= 3 * patch_size ** 2 with patch_size={self.config.patch_size})"
            )
        image_features = self.patch_embeddings(pixel_values.to(self.patch_embeddings.norm.weight.dtype))
        return BaseModelOutputWithPooling(last_hidden_state=image_features, pooler_output=image_features)

    def get_placeholder_mask(self, input_ids, image_features):
        previous_ids = F.pad(input_ids[:, :-1], (1, 0), value=self.config.pad_token_id or 0)
        image_mask = (input_ids == self.config.image_token_id) & (previous_ids != self.config.document_token_id)
        return image_mask.unsqueeze(-1).expand(-1, -1, image_features.shape[-1])

    def forward(self, input_ids, pixel_values):
        image_features = self.get_image_features(pixel_values).pooler_output
        mask = self.get_placeholder_mask(input_ids, image_features)
        return image_features.sum(0) * mask.float().mean()


def build():
    return NeoMMEImageFeatures().eval()


def inputs(batch: int):
    ids = torch.randint(6, 30, (2, 9))
    ids[:, 2:5] = 5
    return (ids, torch.randn(4 * batch, 12))  # 4 patches per image, `batch` images
