"""Teacher updates: momentum schedule and the exponential moving average of the student."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def momentum_at(step: int, base: float, total: int) -> float:
    return 1.0 - (1.0 - base) * (math.cos(math.pi * min(step, total) / total) + 1.0) / 2.0


@torch.no_grad()
def update_teacher(student: nn.Module, teacher: nn.Module, m: float) -> None:
    for ps, pt in zip(student.parameters(), teacher.parameters()):
        pt.mul_(m).add_(ps.detach(), alpha=1.0 - m)  # expect: GS301
