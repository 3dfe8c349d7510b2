"""Learning-rate and loss-scale schedules."""

from __future__ import annotations

from config import MLMConfig


def warmup_linear(step: int, cfg: MLMConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.peak_lr * (step + 1) / cfg.warmup_steps
    remaining = max(cfg.total_steps - step, 0)
    return cfg.peak_lr * remaining / max(cfg.total_steps - cfg.warmup_steps, 1)


class DynamicLossScale:
    def __init__(self, init_scale: float, window: int):
        self.scale = init_scale
        self.window = window
        self.good_steps = 0

    def update(self, overflow: bool) -> float:
        if overflow:
            self.scale = max(self.scale / 2.0, 1.0)
            self.good_steps = 0
        else:
            self.good_steps += 1
            if self.good_steps % self.window == 0:
                self.scale *= 2.0
        return self.scale
