"""Generator EMA with the StyleGAN2-ADA ramp-up."""

from __future__ import annotations

import torch
import torch.nn as nn


def ema_beta(step: int, batch_size: int, ema_kimg: float, rampup: float) -> float:
    ema_nimg = ema_kimg * 1000
    ema_nimg = min(ema_nimg, step * batch_size * rampup)
    return 0.5 ** (batch_size / max(ema_nimg, 1e-8))


@torch.no_grad()
def update_ema(ema_model: nn.Module, model: nn.Module, beta: float) -> None:
    for p_ema, p in zip(ema_model.parameters(), model.parameters()):
        p_ema.copy_(p.lerp(p_ema, beta))  # expect: GS301
    for b_ema, b in zip(ema_model.buffers(), model.buffers()):
        b_ema.copy_(b)
