"""Online alarm threshold tracking a running quantile of reconstruction errors."""

from __future__ import annotations

import torch

from config import ThresholdConfig


class RunningQuantile:
    def __init__(self, cfg: ThresholdConfig, chunk: int, device: torch.device):
        self.q = cfg.quantile
        self.chunk = chunk
        self.window = torch.zeros(cfg.window, device=device)
        self.threshold = torch.full((), cfg.init_threshold, device=device)
        self.step_size = cfg.quantile_step

    def update(self, scores: torch.Tensor) -> torch.Tensor:
        self.window = torch.cat([self.window[self.chunk:], scores.detach().flatten()])  # expect: GS401
        exceed = (self.window > self.threshold).float().mean()
        if exceed > 2.0 * (1.0 - self.q):  # expect: GS201
            self.threshold.mul_(1.1)
        self.threshold.add_(self.step_size * (exceed - (1.0 - self.q)))  # expect: GS301
        self.threshold.clamp_(min=1e-3)
        return self.threshold

    def anneal(self, decay: float) -> None:
        self.step_size *= decay

    @torch.no_grad()
    def reset_(self) -> None:
        self.window.zero_()
