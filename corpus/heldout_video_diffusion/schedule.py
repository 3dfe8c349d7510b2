"""Noise schedule, v-prediction targets and min-SNR loss weights."""

from __future__ import annotations

import math

import torch


def cosine_alphas_cumprod(timesteps: int, s: float = 0.008) -> torch.Tensor:
    steps = torch.arange(timesteps + 1, dtype=torch.float64) / timesteps
    f = torch.cos((steps + s) / (1 + s) * math.pi / 2) ** 2
    ac = f / f[0]
    return ac[1:].clamp(1e-5, 0.9999).float()


def warmup_lr(step: int, cfg) -> float:
    return cfg.lr * min(1.0, (step + 1) / cfg.warmup_steps)


def expand_like(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return v.view(v.shape[0], *([1] * (x.dim() - 1)))


def v_target(x0: torch.Tensor, noise: torch.Tensor, sqrt_ac: torch.Tensor, sqrt_1m_ac: torch.Tensor) -> torch.Tensor:
    return sqrt_ac * noise - sqrt_1m_ac * x0


def min_snr_weight(snr: torch.Tensor, gamma: float) -> torch.Tensor:
    return torch.clamp(snr, max=gamma) / (snr + 1.0)
