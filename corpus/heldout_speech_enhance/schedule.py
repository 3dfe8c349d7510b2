"""Learning-rate warm-up."""

from __future__ import annotations


def warmup_factor(step: int, warmup_steps: int) -> float:
    return min(1.0, (step + 1) / max(1, warmup_steps))
