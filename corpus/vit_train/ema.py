"""Exponential moving average of model weights."""

from __future__ import annotations

import copy

import torch


class ModelEma:
    def __init__(self, model: torch.nn.Module, decay: float):
        self.decay = decay
        self.updates = 0
        self.shadow = copy.deepcopy(model).eval()
        for p in self.shadow.parameters():
            p.requires_grad_(False)

    @property
    def current_decay(self) -> float:
        return min(self.decay, (1 + self.updates) / (10 + self.updates))

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        self.updates += 1  # expect: GS302
        d = self.current_decay
        for e, p in zip(self.shadow.parameters(), model.parameters()):
            e.lerp_(p, 1.0 - d)  # expect: GS301
        for eb, b in zip(self.shadow.buffers(), model.buffers()):
            eb.copy_(b)
