"""Exponential moving average of model weights with a warm-up decay."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn


class ModelEma:
    def __init__(self, model: nn.Module, decay: float, skip_nonfinite: bool = True):
        self.module = copy.deepcopy(model).eval()
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.base_decay = decay
        self.skip_nonfinite = skip_nonfinite
        self.updates = 0

    @property
    def decay(self) -> float:
        return min(self.base_decay, (1 + self.updates) / (10 + self.updates))

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        self.updates += 1  # expect: GS302
        for ema_p, p in zip(self.module.parameters(), model.parameters()):
            if self.skip_nonfinite and not torch.isfinite(p).all():  # expect: GS201
                continue
            ema_p.lerp_(p.detach(), 1.0 - self.decay)  # expect: GS301
        for ema_b, b in zip(self.module.buffers(), model.buffers()):
            ema_b.copy_(b)
