"""Exponential moving average of model weights."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn


class ModelEma:
    def __init__(self, model: nn.Module, decay: float):
        self.decay = decay
        self.module = copy.deepcopy(model).eval()
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        d = min(self.decay, (1 + step) / (10 + step))
        for e, p in zip(self.module.parameters(), model.parameters()):
            e.lerp_(p, 1.0 - d)  # expect: GS301
