from __future__ import annotations

import copy

import torch
import torch.nn as nn


class EMA:
    def __init__(self, model: nn.Module, max_decay: float):
        self.shadow = copy.deepcopy(model).eval().requires_grad_(False)
        self.max_decay = max_decay
        self.num_updates = 0

    def current_decay(self) -> float:
        return min(self.max_decay, (1 + self.num_updates) / (10 + self.num_updates))

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        self.num_updates += 1  # expect: GS302
        decay = self.current_decay()
        for ema_p, p in zip(self.shadow.parameters(), model.parameters()):
            ema_p.copy_(ema_p * decay + p.detach() * (1.0 - decay))  # expect: GS301
        for ema_b, b in zip(self.shadow.buffers(), model.buffers()):
            ema_b.copy_(b)
