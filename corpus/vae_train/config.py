from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VAEConfig:
    image_size: int = 8
    channels: int = 1
    hidden: int = 64
    latent_dim: int = 8
    batch_size: int = 16
    lr: float = 2e-3
    momentum: float = 0.9
    free_bits: float = 0.05
    kl_anneal_steps: int = 4
    kl_max: float = 1.0
    ema_decay: float = 0.995
    sample_every: int = 2
    grid_rows: int = 4
    active_threshold: float = 0.01
    compile: bool = True
