"""KL control: an adaptive coefficient and the reference-model refresh."""

from __future__ import annotations

import torch
import torch.nn as nn


class AdaptiveKLController:
    """Adaptive KL coefficient (Ziegler et al., 2019)."""

    def __init__(self, init_kl_coef: float, target: float, horizon: int):
        self.value = init_kl_coef
        self.target = target
        self.horizon = horizon

    def update(self, current: float, n_steps: int) -> None:
        proportional_error = min(max(current / self.target - 1.0, -0.2), 0.2)
        mult = 1.0 + proportional_error * n_steps / self.horizon
        self.value *= mult


@torch.no_grad()
def sync_reference(ref_model: nn.Module, policy: nn.Module, mix: float) -> None:
    for rp, p in zip(ref_model.parameters(), policy.parameters()):
        rp.mul_(1.0 - mix).add_(p.detach(), alpha=mix)
