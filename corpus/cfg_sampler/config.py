"""Sampler settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class SamplerConfig:
    latent_channels: int = 4
    latent_size: int = 8
    image_channels: int = 3
    base_channels: int = 16
    context_dim: int = 12
    num_steps: int = 6
    sigma_min: float = 0.03
    sigma_max: float = 14.6
    rho: float = 7.0
    sampler: str = "euler_a"
    eta: float = 1.0
    guidance_start: float = 7.5
    guidance_end: float = 3.0
    guidance_rescale: float = 0.7
    rescale_threshold: float = 5.0
    fixed_noise_seed: Optional[int] = None
    preview_every: int = 0
    preview_dir: str = ""
    keep_trajectory: bool = True
    low_memory: bool = True
    verbose: bool = False
    check_nans: bool = True
    scaling_factor: float = 0.18215
    latent_mean: tuple = (0.02, -0.01, 0.0, 0.01)
    batch_size: int = 2
