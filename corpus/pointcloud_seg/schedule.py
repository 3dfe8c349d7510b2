"""Step decay schedules for the learning rate and the BatchNorm momentum (both with floors)."""

from __future__ import annotations

import torch.nn as nn


def step_lr(epoch: int, base_lr: float, decay: float, step: int, floor: float) -> float:
    return max(base_lr * decay ** (epoch // step), floor)


def bn_momentum_at(epoch: int, base: float, decay: float, step: int, floor: float) -> float:
    return max(base * decay ** (epoch // step), floor)


def set_bn_momentum(model: nn.Module, momentum: float) -> None:
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.momentum = momentum
