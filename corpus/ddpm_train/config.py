from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DiffusionConfig:
    num_timesteps: int = 100
    beta_start: float = 1e-4
    beta_end: float = 0.02
    snr_gamma: float = 5.0
    data_dim: int = 16
    hidden: int = 64
    num_classes: int = 4
    uncond_prob: float = 0.1
    full_uncond_prob: float = 0.05
    lr: float = 2e-4
    warmup_steps: int = 10
    max_grad_norm: float = 1.0
    ema_max_decay: float = 0.999
    batch_size: int = 32
    grad_checkpoint: bool = True
    importance_sampling: bool = True
    reseed_every_step: bool = True
    profile: bool = False
    seed: int = 0
