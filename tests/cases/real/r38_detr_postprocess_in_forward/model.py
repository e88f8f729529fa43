"""End-to-end detector module: DETR-style heads followed by post_process_object_detection.

Imitates transformers/models/detr/image_processing_detr.py: DetrImageProcessor.post_process_object_detection
(`len(out_logits) != len(target_sizes)` check, softmax / max, `target_sizes.unbind(1)` scaling,
`for s, l, b in zip(scores, labels, boxes): score = s[s > threshold]`),
transformers/image_transforms.py: center_to_corners_format, and the heads of
transformers/models/detr/modeling_detr.py: DetrForObjectDetection (class_labels_classifier,
DetrMLPPredictionHead bbox_predictor), wrapped the way an object-detection pipeline calls them.
"""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class DetrObjectDetectionOutput:
    logits: torch.Tensor
    pred_boxes: torch.Tensor


def center_to_corners_format(bboxes_center):
    center_x, center_y, width, height = bboxes_center.unbind(-1)
    return torch.stack(
        [(center_x - 0.5 * width), (center_y - 0.5 * height), (center_x + 0.5 * width), (center_y + 0.5 * height)],
        dim=-1,
    )


def post_process_object_detection(outputs, threshold: float = 0.5, target_sizes=None):
    out_logits, out_bbox = outputs.logits, outputs.pred_boxes
    if target_sizes is not None:
        if len(out_logits) != len(target_sizes):
            raise ValueError("Make sure that you pass in as many target sizes as the batch dimension of the logits")
    prob = nn.functional.softmax(out_logits, -1)
    scores, labels = prob[..., :-1].max(-1)
    boxes = center_to_corners_format(out_bbox)
    if target_sizes is not None:
        if isinstance(target_sizes, list):
            img_h = torch.Tensor([i[0] for i in target_sizes])
            img_w = torch.Tensor([i[1] for i in target_sizes])
        else:
            img_h, img_w = target_sizes.unbind(1)
        scale_fct = torch.stack([img_w, img_h, img_w, img_h], dim=1).to(boxes.device)
        boxes = boxes * scale_fct[:, None, :]
    results = []
    for s, l, b in zip(scores, labels, boxes):
        score = s[s > threshold]
        label = l[s > threshold]
        box = b[s > threshold]
        results.append({"scores": score, "labels": label, "boxes": box})
    return results


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


class DetrDetector(nn.Module):
    def __init__(self, d_model: int = 16, num_queries: int = 6, num_labels: int = 3):
        super().__init__()
        self.query_position_embeddings = nn.Embedding(num_queries, d_model)
        self.backbone = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, d_model))
        self.class_labels_classifier = nn.Linear(d_model, num_labels + 1)
        self.bbox_predictor = DetrMLPPredictionHead(d_model, d_model, 4, num_layers=3)

    def forward(self, pixel_values, target_sizes, threshold: float = 0.3):
        memory = self.backbone(pixel_values)
        sequence_output = memory[:, None, :] + self.query_position_embeddings.weight[None]
        logits = self.class_labels_classifier(sequence_output)
        pred_boxes = self.bbox_predictor(sequence_output).sigmoid()
        outputs = DetrObjectDetectionOutput(logits=logits, pred_boxes=pred_boxes)
        return post_process_object_detection(outputs, threshold=threshold, target_sizes=target_sizes)


def build():
    return DetrDetector().eval()


def inputs(batch: int):
    return (torch.randn(batch, 3, 8, 8), torch.tensor([[480, 640]] * batch))
