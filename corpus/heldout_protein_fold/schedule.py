"""Learning-rate schedule."""

from __future__ import annotations

import math


class WarmupCosine:
    def __init__(self, base_lr: float, warmup: int, total: int, floor: float = 0.05):
        self.base_lr = base_lr
        self.warmup = warmup
        self.total = total
        self.floor = floor

    def lr_at(self, step: int) -> float:
        if step < self.warmup:
            return self.base_lr * (step + 1) / self.warmup
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        return self.base_lr * (self.floor + (1 - self.floor) * 0.5 * (1 + math.cos(math.pi * progress)))
