"""Schedules for the loss mix."""

from __future__ import annotations

import math


class CosineSchedule:
    def __init__(self, start: float, end: float, total: int):
        self.start = start
        self.end = end
        self.total = total

    def value(self, step: int) -> float:
        frac = min(step, self.total) / max(1, self.total)
        return self.end + 0.5 * (self.start - self.end) * (1.0 + math.cos(math.pi * frac))
