"""A single-object detector (class logits + one normalised cxcywh box per image) and DETR's box
utilities."""

from __future__ import annotations

import torch
import torch.nn as nn


class TinyDetector(nn.Module):
    def __init__(self, num_classes: int = 3, width: int = 16, image_size: int = 16):
        super().__init__()
        self.image_size = image_size
        self.backbone = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        )
        self.cls_head = nn.Linear(2 * width, num_classes)
        self.box_head = nn.Sequential(nn.Linear(2 * width, width), nn.ReLU(), nn.Linear(width, 4))

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if images.shape[-2:] != (self.image_size, self.image_size):
            raise ValueError(f"expected {self.image_size}x{self.image_size} images, got {tuple(images.shape)}")
        feats = self.backbone(images).mean(dim=(2, 3))
        return self.cls_head(feats), self.box_head(feats).sigmoid()


def box_cxcywh_to_xyxy(b: torch.Tensor) -> torch.Tensor:
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def generalized_box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    """Row-wise GIoU of two (N, 4) xyxy box sets."""
    # degenerate boxes give inf / nan results, so do an early check
    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()  # expect: GS201
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, 2:], boxes2[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=-1)
    union = area1 + area2 - inter
    iou = inter / union.clamp(min=1e-6)
    lt_c = torch.min(boxes1[:, :2], boxes2[:, :2])
    rb_c = torch.max(boxes1[:, 2:], boxes2[:, 2:])
    hull = (rb_c - lt_c).clamp(min=0).prod(dim=-1)
    return iou - (hull - union) / hull.clamp(min=1e-6)
