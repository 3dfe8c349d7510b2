"""Learning-rate and teacher-forcing schedules."""

from __future__ import annotations

import math

import torch

from config import ForecastConfig


def lr_at(step: int, cfg: ForecastConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.total_steps - cfg.warmup_steps))
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + math.cos(math.pi * progress))


def teacher_forcing_prob(step: int, cfg: ForecastConfig) -> float:
    return max(cfg.tf_min, cfg.tf_start * cfg.tf_decay**step)


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for group in opt.param_groups:
        group["lr"] = lr  # expect: GS301


def scheduled_sampling_mask(shape: torch.Size, tf_prob: float, device: torch.device) -> torch.Tensor:
    return torch.rand(shape, device=device) < tf_prob  # expect: GS301
