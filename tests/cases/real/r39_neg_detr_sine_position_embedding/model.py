"""DETR sine position embedding and prediction heads over a fixed-size feature map.

Imitates transformers/models/detr/modeling_detr.py: DetrSinePositionEmbedding.build_sine_position_embedding
/ forward (shape unpacked from a torch.Size, `if mask is None` arange path, `if normalize`,
`temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_position_features)`),
DetrMLPPredictionHead and the head part of DetrForObjectDetection.forward.
"""
import math

import torch
from torch import nn


class DetrSinePositionEmbedding(nn.Module):
    def __init__(self, num_position_features: int = 8, temperature: int = 10000, normalize: bool = True, scale=None):
        super().__init__()
        if scale is not None and normalize is False:
            raise ValueError("normalize should be True if scale is passed")
        self.num_position_features = num_position_features
        self.temperature = temperature
        self.normalize = normalize
        self.scale = 2 * math.pi if scale is None else scale

    @staticmethod
    def build_sine_position_embedding(shape, device, dtype, num_position_features: int, normalize: bool = False,
                                      scale=None, temperature: int = 10000, mask=None):
        batch_size, _, height, width = shape
        if mask is None:
            y_embed = torch.arange(1, height + 1, dtype=dtype, device=device)[None, :, None].expand(batch_size, height, width)
            x_embed = torch.arange(1, width + 1, dtype=dtype, device=device)[None, None, :].expand(batch_size, height, width)
        else:
            embed_mask = mask.to(dtype)
            y_embed = embed_mask.cumsum(1)
            x_embed = embed_mask.cumsum(2)
        if normalize:
            eps = 1e-6
            y_embed = y_embed / (y_embed[:, -1:, :] + eps) * scale
            x_embed = x_embed / (x_embed[:, :, -1:] + eps) * scale
        dim_t = torch.arange(num_position_features, dtype=torch.int64, device=device).to(dtype)
        dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_position_features)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)

    def forward(self, shape, device, dtype, mask=None):
        return self.build_sine_position_embedding(shape, device, dtype, self.num_position_features, self.normalize,
                                                  self.scale, self.temperature, mask)


class DetrMLPPredictionHead(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        self.num_layers = num_layers
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = nn.functional.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        return x


class DetrHeads(nn.Module):
    def __init__(self, d_model: int = 16, num_labels: int = 3):
        super().__init__()
        self.position_embedding = DetrSinePositionEmbedding(d_model // 2)
        self.input_projection = nn.Linear(4, d_model)
        self.class_labels_classifier = nn.Linear(d_model, num_labels + 1)
        self.bbox_predictor = DetrMLPPredictionHead(d_model, d_model, 4, num_layers=3)

    def forward(self, feature_map):
        pos = self.position_embedding(feature_map.shape, feature_map.device, feature_map.dtype)
        projected = self.input_projection(feature_map.flatten(2).transpose(1, 2))
        sequence_output = projected + pos.flatten(2).transpose(1, 2)
        logits = self.class_labels_classifier(sequence_output)
        pred_boxes = self.bbox_predictor(sequence_output).sigmoid()
        return logits, pred_boxes


def build():
    return DetrHeads().eval()


def inputs(batch: int):
    return (torch.randn(batch, 4, 5, 6),)
