"""Noise-level and guidance schedules."""

from __future__ import annotations

import torch

from config import SamplerConfig


def karras_sigmas(n: int, sigma_min: float, sigma_max: float, rho: float = 7.0) -> torch.Tensor:
    ramp = torch.linspace(0, 1, n)
    min_inv, max_inv = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    sigmas = (max_inv + ramp * (min_inv - max_inv)) ** rho
    return torch.cat([sigmas, sigmas.new_zeros(1)])


class KarrasScheduler:
    def __init__(self, cfg: SamplerConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.sigmas = karras_sigmas(cfg.num_steps, cfg.sigma_min, cfg.sigma_max, cfg.rho).to(device)

    def set_timesteps(self, num_steps: int) -> None:
        self.sigmas = karras_sigmas(num_steps, self.cfg.sigma_min, self.cfg.sigma_max, self.cfg.rho).to(self.device)  # expect: GS401

    @property
    def init_noise_sigma(self) -> float:
        return float(self.cfg.sigma_max)


def guidance_at(step: int, num_steps: int, cfg: SamplerConfig) -> float:
    frac = step / max(num_steps - 1, 1)
    return cfg.guidance_start + frac * (cfg.guidance_end - cfg.guidance_start)
