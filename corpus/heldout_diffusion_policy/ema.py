"""Exponential moving average of the noise predictor, with the warm-up decay of diffusers."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn

from config import EMAConfig


class EMAModel:
    def __init__(self, model: nn.Module, cfg: EMAConfig):
        self.averaged = copy.deepcopy(model).eval().requires_grad_(False)
        self.update_after_step = cfg.update_after_step
        self.inv_gamma = cfg.inv_gamma
        self.power = cfg.power
        self.min_decay = cfg.min_decay
        self.max_decay = cfg.max_decay
        self.optimization_step = 0

    def get_decay(self, step: int) -> float:
        step = max(0, step - self.update_after_step - 1)
        value = 1.0 - (1.0 + step / self.inv_gamma) ** -self.power
        return max(self.min_decay, min(value, self.max_decay))

    @torch.no_grad()
    def step(self, model: nn.Module) -> None:
        self.optimization_step += 1  # expect: GS302
        if any(torch.isnan(p).any() for p in model.parameters()):  # expect: GS201
            return
        if self.optimization_step <= self.update_after_step:  # expect: GS301
            return
        decay = self.get_decay(self.optimization_step)
        for ema_p, p in zip(self.averaged.parameters(), model.parameters()):
            ema_p.mul_(decay).add_(p.detach(), alpha=1.0 - decay)  # expect: GS301
        for ema_b, b in zip(self.averaged.buffers(), model.buffers()):
            ema_b.copy_(b)
