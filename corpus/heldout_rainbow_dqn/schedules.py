"""Importance-sampling exponent annealing."""

from __future__ import annotations


def beta_by_update(update: int, cfg) -> float:
    frac = min(1.0, update / cfg.beta_updates)
    return cfg.beta0 + frac * (1.0 - cfg.beta0)
