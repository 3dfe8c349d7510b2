"""Adaptive discriminator augmentation (ADA), a reduced pipeline: x-flip and brightness."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import StyleGANConfig


class AdaptiveAugment(nn.Module):
    def __init__(self, cfg: StyleGANConfig):
        super().__init__()
        self.p = 0.0
        self.target = cfg.ada_target
        self.speed = cfg.ada_speed

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        b = images.shape[0]
        flip = torch.rand(b, 1, 1, 1, device=images.device) < self.p  # expect: GS301
        images = torch.where(flip, images.flip(3), images)
        gate = (torch.rand(b, 1, 1, 1, device=images.device) < self.p).to(images.dtype)  # expect: GS301
        brightness = torch.randn(b, 1, 1, 1, device=images.device) * 0.2
        return images + brightness * gate

    def update(self, real_logits: torch.Tensor) -> None:
        rt = real_logits.sign().mean()
        adjust = self.speed if rt > self.target else -self.speed  # expect: GS201
        self.p = min(max(self.p + adjust, 0.0), 1.0)  # expect: GS302
