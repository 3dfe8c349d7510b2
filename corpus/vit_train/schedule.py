"""Warm-up + cosine learning-rate schedule evaluated per step on the host."""

from __future__ import annotations

import math

from config import OptimConfig


class CosineSchedule:
    def __init__(self, cfg: OptimConfig):
        self.cfg = cfg

    def __call__(self, step: int) -> float:
        c = self.cfg
        if step < c.warmup_steps:
            return c.base_lr * (step + 1) / c.warmup_steps
        progress = (step - c.warmup_steps) / max(1, c.total_steps - c.warmup_steps)
        return c.min_lr + 0.5 * (c.base_lr - c.min_lr) * (1.0 + math.cos(math.pi * min(progress, 1.0)))
