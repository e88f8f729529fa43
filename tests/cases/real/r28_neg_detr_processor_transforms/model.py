"""Image preprocessing helpers (resize size arithmetic, pad to the batch max, pixel mask) next to the model.

The helpers imitate transformers/image_transforms.py: get_size_with_aspect_ratio (float(min(...)),
int(round(raw_size)), size branches) and transformers/image_utils.py: get_max_height_width, plus
DetrImageProcessor's pad / make_pixel_mask (torch path). They run in the data pipeline, before the
compiled call. The model imitates the masked backbone/pooling front of
transformers/models/detr/modeling_detr.py: DetrConvModel.forward (mask interpolated to the
feature map).
"""
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import nn


def get_size_with_aspect_ratio(image_size, size, max_size=None) -> Tuple[int, int]:
    height, width = image_size
    raw_size = None
    if max_size is not None:
        min_original_size = float(min((height, width)))
        max_original_size = float(max((height, width)))
        if max_original_size / min_original_size * size > max_size:
            raw_size = max_size * min_original_size / max_original_size
            size = int(round(raw_size))
    if (height <= width and height == size) or (width <= height and width == size):
        oh, ow = height, width
    elif width < height:
        ow = size
        oh = int(raw_size * height / width) if max_size is not None and raw_size is not None else int(size * height / width)
    else:
        oh = size
        ow = int(raw_size * width / height) if max_size is not None and raw_size is not None else int(size * width / height)
    return (oh, ow)


def get_max_height_width(images: List[torch.Tensor]) -> Tuple[int, int]:
    max_height = max(img.shape[-2] for img in images)
    max_width = max(img.shape[-1] for img in images)
    return (max_height, max_width)


def make_pixel_mask(image: torch.Tensor, output_size: Tuple[int, int]) -> torch.Tensor:
    input_height, input_width = image.shape[-2:]
    mask = torch.zeros(output_size, dtype=torch.int64)
    mask[:input_height, :input_width] = 1
    return mask


def preprocess(images: List[torch.Tensor], shortest_edge: int = 16, longest_edge: int = 24):
    resized = []
    for image in images:
        size = get_size_with_aspect_ratio(image.shape[-2:], shortest_edge, longest_edge)
        resized.append(F.interpolate(image[None], size=size, mode="bilinear", align_corners=False)[0])
    pad_size = get_max_height_width(resized)
    pixel_values, pixel_mask = [], []
    for image in resized:
        bottom, right = pad_size[0] - image.shape[-2], pad_size[1] - image.shape[-1]
        if bottom > 0 or right > 0:
            image = F.pad(image, (0, right, 0, bottom))
        pixel_values.append(image)
        pixel_mask.append(make_pixel_mask(image[..., : pad_size[0] - bottom, : pad_size[1] - right], pad_size))
    return torch.stack(pixel_values), torch.stack(pixel_mask)


class DetrConvModel(nn.Module):
    def __init__(self, hidden: int = 8):
        super().__init__()
        self.backbone = nn.Sequential(nn.AvgPool2d(4), nn.Flatten(2))
        self.input_projection = nn.Linear(3, hidden)

    def forward(self, pixel_values, pixel_mask):
        features = self.backbone(pixel_values)  # (batch, 3, h/4 * w/4)
        h, w = pixel_values.shape[-2] // 4, pixel_values.shape[-1] // 4
        mask = F.interpolate(pixel_mask[None].float(), size=(h, w)).to(torch.bool)[0]
        projected = self.input_projection(features.transpose(1, 2))
        projected = projected * mask.flatten(1)[..., None]
        return projected.sum(1) / mask.flatten(1).sum(1, keepdim=True).clamp(min=1)


def build():
    return DetrConvModel().eval()


_IMAGES = [torch.rand(3, 30 + 3 * i, 20 + 2 * i) for i in range(17)]  # same aspect ratio: one padded size


def inputs(batch: int):
    # the processor runs here, eagerly; only the model forward is compiled
    return preprocess(_IMAGES[:batch])
