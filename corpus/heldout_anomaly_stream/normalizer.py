"""Per-sensor running normalisation."""

from __future__ import annotations

import torch
import torch.nn as nn


class SensorNormalizer(nn.Module):
    def __init__(self, n_sensors: int, momentum: float, max_abs: float, eps: float = 1e-5):
        super().__init__()
        self.momentum = momentum
        self.max_abs = max_abs
        self.eps = eps
        self.track = True
        self.count = 0
        self.register_buffer("mean", torch.zeros(n_sensors))
        self.register_buffer("var", torch.ones(n_sensors))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert (x.abs() < self.max_abs).all(), "sensor reading out of range"  # expect: GS201
        if self.track:
            self.count += 1  # expect: GS302
            self.mean = self.momentum * self.mean + (1.0 - self.momentum) * x.mean(0)  # expect: GS401
            self.var.mul_(self.momentum).add_((1.0 - self.momentum) * x.var(0, unbiased=False))
        return (x - self.mean) / (self.var + self.eps).sqrt()

    @torch.no_grad()
    def reset_(self) -> None:
        self.mean.zero_()
        self.var.fill_(1.0)
