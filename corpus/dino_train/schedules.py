"""Schedules for DINO: cosine decay with linear warm-up, and the teacher temperature warm-up."""

from __future__ import annotations

import math


def cosine_at(step: int, base: float, final: float, total: int, warmup: int = 0, start: float = 0.0) -> float:
    if step < warmup:
        return start + (base - start) * step / max(1, warmup)
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return final + 0.5 * (base - final) * (1.0 + math.cos(math.pi * progress))


def teacher_temp_table(warmup_temp: float, temp: float, warmup_epochs: int, epochs: int) -> list[float]:
    ramp = [warmup_temp + (temp - warmup_temp) * i / max(1, warmup_epochs - 1) for i in range(warmup_epochs)]
    return ramp + [temp] * max(0, epochs - warmup_epochs)
