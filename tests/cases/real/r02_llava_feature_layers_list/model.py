"""LLaVA-style image features: pick several vision hidden states, crop CLS, project.

Imitates transformers/models/llava/modeling_llava.py: LlavaModel.get_image_features (the
`vision_feature_layer` list branch and the `image_sizes is None` tail) and a CLIP-like vision
tower that returns a tuple of all hidden states.
"""
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
from torch import nn


@dataclass
class VisionOutput:
    last_hidden_state: torch.Tensor
    hidden_states: Optional[Tuple[torch.Tensor, ...]] = None
    pooler_output: Optional[object] = None


class TinyVisionTower(nn.Module):
    def __init__(self, dim: int = 16, depth: int = 4, patch_size: int = 4):
        super().__init__()
        self.patch_size = patch_size
        self.patch_embedding = nn.Linear(3 * patch_size * patch_size, dim)
        self.class_embedding = nn.Parameter(torch.randn(dim))
        self.layers = nn.ModuleList(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU()) for _ in range(depth))

    def forward(self, pixel_values, output_hidden_states: bool = True, return_dict: bool = True):
        b, c, h, w = pixel_values.shape
        p = self.patch_size
        patches = pixel_values.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).flatten(3).flatten(1, 2)
        hidden_states = self.patch_embedding(patches)
        cls = self.class_embedding.expand(b, 1, -1)
        hidden_states = torch.cat([cls, hidden_states], dim=1)
        all_hidden_states = () if output_hidden_states else None
        for layer in self.layers:
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            hidden_states = hidden_states + layer(hidden_states)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        return VisionOutput(last_hidden_state=hidden_states, hidden_states=all_hidden_states)


class LlavaImageFeatures(nn.Module):
    def __init__(self, vision_feature_layer: List[int] = (-2, -3), vision_feature_select_strategy: str = "default"):
        super().__init__()
        self.vision_tower = TinyVisionTower()
        self.vision_feature_layer = list(vision_feature_layer)
        self.vision_feature_select_strategy = vision_feature_select_strategy
        self.multi_modal_projector = nn.Sequential(nn.Linear(16 * len(self.vision_feature_layer), 24), nn.GELU(), nn.Linear(24, 24))

    def forward(self, pixel_values, image_sizes=None):
        vision_feature_layer = self.vision_feature_layer
        vision_feature_select_strategy = self.vision_feature_select_strategy
        image_outputs = self.vision_tower(pixel_values, output_hidden_states=True, return_dict=True)

        if isinstance(vision_feature_layer, int):
            selected_image_feature = image_outputs.hidden_states[vision_feature_layer]
            if vision_feature_select_strategy == "default":
                selected_image_feature = selected_image_feature[:, 1:]
        else:
            hs_pool = [image_outputs.hidden_states[layer_idx] for layer_idx in vision_feature_layer]
            if vision_feature_select_strategy == "default":
                hs_pool = [hs[:, 1:] for hs in hs_pool]
            selected_image_feature = torch.cat(hs_pool, dim=-1)

        pooled = [x[:, 1:].mean(dim=1) for x in image_outputs.hidden_states[-2:]]
        image_features = self.multi_modal_projector(selected_image_feature)

        if image_sizes is not None:
            split_sizes = (torch.as_tensor(image_sizes) // self.vision_tower.patch_size).prod(dim=-1).tolist()
            image_features = torch.split(image_features.squeeze(0), split_sizes)
        else:
            image_features = list(image_features)
        image_outputs.pooler_output = image_features
        return torch.stack(image_features).sum() + sum(p.sum() for p in pooled)


def build():
    return LlavaImageFeatures()


def inputs(batch: int):
    return (torch.randn(batch, 3, 8, 8),)
