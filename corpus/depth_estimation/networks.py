"""Depth and pose networks (tiny Monodepth2-style)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class DepthNet(nn.Module):
    def __init__(self, num_scales: int, width: int = 8, use_checkpoint: bool = True):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.ELU(), nn.Conv2d(width, width, 3, padding=1), nn.ELU()
        )
        self.heads = nn.ModuleList([nn.Conv2d(width, 1, 3, padding=1) for _ in range(num_scales)])
        self.use_checkpoint = use_checkpoint

    def forward(self, image: torch.Tensor) -> list[torch.Tensor]:
        if image.dim() == 3:
            image = image.unsqueeze(0)
        if self.use_checkpoint:
            feat = checkpoint(self.encoder, image, use_reentrant=False)  # expect: GS603
        else:
            feat = self.encoder(image)
        disps = []
        for i, head in enumerate(self.heads):
            pooled = F.avg_pool2d(feat, 2**i) if i > 0 else feat
            disps.append(torch.sigmoid(head(pooled)))
        return disps


class PoseNet(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(6, width, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(width, 6, 1))

    def forward(self, target: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        h = self.net(torch.cat([target, source], dim=1)).mean(dim=(2, 3))
        assert torch.isfinite(h).all(), "pose diverged"  # expect: GS201
        return 0.01 * h
