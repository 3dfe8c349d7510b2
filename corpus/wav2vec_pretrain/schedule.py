from __future__ import annotations

import math


class TriStageSchedule:
    """Warmup -> hold -> exponential decay, as in the wav2vec 2.0 fine-tuning recipes."""

    def __init__(self, peak_lr: float, warmup: int, hold: int, decay: int, final_scale: float):
        self.peak_lr = peak_lr
        self.warmup = warmup
        self.hold = hold
        self.decay = decay
        self.init_lr = peak_lr * 0.01
        self.final_lr = peak_lr * final_scale
        self.decay_factor = -math.log(final_scale) / max(decay, 1)

    def value(self, update: int) -> float:
        if update < self.warmup:
            return self.init_lr + (self.peak_lr - self.init_lr) * update / max(self.warmup, 1)
        update -= self.warmup
        if update < self.hold:
            return self.peak_lr
        update -= self.hold
        if update <= self.decay:
            return self.peak_lr * math.exp(-self.decay_factor * update)
        return self.final_lr


def gumbel_temperature(current: float, decay: float, floor: float) -> float:
    return max(floor, current * decay)
