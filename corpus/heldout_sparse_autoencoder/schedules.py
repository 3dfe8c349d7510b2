"""L1 coefficient warm-up and a linear learning-rate decay tail."""

from __future__ import annotations

from config import SAEConfig


def l1_coef_at(step: int, cfg: SAEConfig) -> float:
    return cfg.l1_coef * min(1.0, (step + 1) / cfg.l1_warmup_steps)


def lr_at(step: int, cfg: SAEConfig) -> float:
    if step < cfg.lr_decay_start:
        return cfg.lr
    frac = (step - cfg.lr_decay_start) / max(1, cfg.total_steps - cfg.lr_decay_start)
    return cfg.lr * max(0.0, 1.0 - frac)
