"""Schedules for the planner's action noise and mean momentum."""

from __future__ import annotations

import math


def noise_at(step: int, start: float, end: float, steps: int) -> float:
    frac = min(1.0, step / max(1, steps))
    return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * frac))


def momentum_at(step: int, base: float) -> float:
    return min(0.9, base * (1.0 + 0.1 * step))
