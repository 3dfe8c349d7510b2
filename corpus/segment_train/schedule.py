"""Poly learning-rate policy."""

from __future__ import annotations

import torch


def poly_lr(base_lr: float, it: int, max_iters: int, power: float) -> float:
    return base_lr * (1.0 - min(it, max_iters - 1) / max_iters) ** power


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for group in opt.param_groups:
        group["lr"] = lr * group.get("lr_mult", 1.0)  # expect: GS301
