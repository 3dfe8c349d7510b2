"""A single-level anchor-based detector (RetinaNet-style head on a tiny conv backbone)."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import DetectorConfig


class Backbone(nn.Module):
    def __init__(self, cfg: DetectorConfig):
        super().__init__()
        c = cfg.channels
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, stride=2, padding=1), nn.BatchNorm2d(c), nn.ReLU())
        self.stage = nn.Sequential(nn.Conv2d(c, c, 3, stride=2, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c, 3, stride=2, padding=1), nn.ReLU())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if not torch.isfinite(images).all():  # expect: GS201
            raise ValueError("non-finite pixels in the input batch")
        return self.stage(self.stem(images))


class Head(nn.Module):
    def __init__(self, cfg: DetectorConfig):
        super().__init__()
        self.num_anchors = len(cfg.anchor_sizes)
        self.num_classes = cfg.num_classes
        self.cls = nn.Conv2d(cfg.channels, self.num_anchors * cfg.num_classes, 3, padding=1)
        self.reg = nn.Conv2d(cfg.channels, self.num_anchors * 4, 3, padding=1)

    def forward(self, feats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = feats.shape[0]
        cls = self.cls(feats).permute(0, 2, 3, 1).reshape(b, -1, self.num_classes)
        reg = self.reg(feats).permute(0, 2, 3, 1).reshape(b, -1, 4)
        return cls, reg


class Detector(nn.Module):
    def __init__(self, cfg: DetectorConfig):
        super().__init__()
        self.cfg = cfg
        self.backbone = Backbone(cfg)
        self.head = Head(cfg)
        self._anchor_cache: dict[tuple[int, int, torch.device], torch.Tensor] = {}

    def prepare_anchors(self, h: int, w: int, device: torch.device) -> None:
        ys, xs = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
        centers = torch.stack([xs, ys], -1).reshape(-1, 1, 2).float().add(0.5).mul(self.cfg.stride)
        sizes = torch.as_tensor(self.cfg.anchor_sizes, device=device).view(1, -1, 1).expand(centers.shape[0], -1, 2)
        self._anchor_cache[(h, w, device)] = torch.cat([centers - sizes / 2, centers + sizes / 2], -1).reshape(-1, 4)

    def anchors(self, feats: torch.Tensor) -> torch.Tensor:
        h, w = feats.shape[-2:]
        return self._anchor_cache[(h, w, feats.device)]

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        feats = self.backbone(images)
        cls, reg = self.head(feats)
        return cls, reg, self.anchors(feats)
