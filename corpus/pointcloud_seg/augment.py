"""Per-batch augmentation: rotation about the up axis, random scaling, clipped jitter."""

from __future__ import annotations

import math
import random

import torch


class CloudAugmenter:
    def __init__(self, sigma: float, clip: float, device: torch.device, seed: int):
        self.sigma = sigma
        self.clip = clip
        self.device = device
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(seed)

    def rotate(self, points: torch.Tensor) -> torch.Tensor:
        theta = torch.rand(points.shape[0], device=points.device) * (2 * math.pi)
        cos, sin = theta.cos(), theta.sin()
        zero, one = torch.zeros_like(cos), torch.ones_like(cos)
        rot = torch.stack([cos, zero, sin, zero, one, zero, -sin, zero, cos], dim=-1).view(-1, 3, 3)
        return points @ rot

    def apply(self, points: torch.Tensor) -> torch.Tensor:
        points = self.rotate(points)
        scale = random.uniform(0.8, 1.25)  # expect: GS502
        noise = torch.randn(points.shape, generator=self.gen, device=points.device)  # expect: GS601
        return points * scale + (noise * self.sigma).clamp(-self.clip, self.clip)  # expect: GS301 (a host draw's number, frozen where it enters device work)
