"""Exponential moving average of the student's weights."""

from __future__ import annotations

import torch


class ModelEMA:
    def __init__(self, model: torch.nn.Module, decay: float):
        self.decay = decay
        self.num_updates = 0
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        self.num_updates += 1  # expect: GS302
        d = min(self.decay, (1 + self.num_updates) / (10 + self.num_updates))
        for name, value in model.state_dict().items():
            if value.dtype.is_floating_point:
                self.shadow[name].lerp_(value.detach(), 1.0 - d)  # expect: GS301
            else:
                self.shadow[name].copy_(value)

    def state_dict(self) -> dict:
        return {k: v.clone() for k, v in self.shadow.items()}
