"""Learning-rate schedules (host-side helpers)."""

from __future__ import annotations

import math

from config import SplatConfig


def position_lr(step: int, cfg: SplatConfig) -> float:
    """Log-linear decay of the position learning rate, as in the 3DGS reference code."""
    t = min(max(step / cfg.position_lr_max_steps, 0.0), 1.0)
    log_lerp = math.log(cfg.position_lr_init) * (1.0 - t) + math.log(cfg.position_lr_final) * t
    return math.exp(log_lerp)


def inverse_sigmoid(x):
    return (x / (1 - x)).log()
