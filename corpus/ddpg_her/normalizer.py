"""Running mean/std normaliser for observations and goals."""

from __future__ import annotations

import torch
import torch.nn as nn


class Normalizer(nn.Module):
    def __init__(self, size: int, eps: float, clip_range: float):
        super().__init__()
        self.eps = eps
        self.clip_range = clip_range
        self.register_buffer("total_sum", torch.zeros(size))
        self.register_buffer("total_sumsq", torch.zeros(size))
        self.register_buffer("count", torch.ones(()))
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("std", torch.ones(size))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, x.shape[-1])
        self.total_sum = self.total_sum + x.sum(0)  # expect: GS401
        self.total_sumsq.add_(x.pow(2).sum(0))
        self.count = self.count + x.shape[0]  # expect: GS401
        self.mean.copy_(self.total_sum / self.count)
        var = self.total_sumsq / self.count - self.mean.pow(2)
        self.std.copy_(torch.sqrt(torch.clamp(var, min=self.eps ** 2)))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        z = (x - self.mean) / self.std
        if torch.isnan(z).any():  # expect: GS201
            z = torch.nan_to_num(z)
        return torch.clamp(z, -self.clip_range, self.clip_range)
