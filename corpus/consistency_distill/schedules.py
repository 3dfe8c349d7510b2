import math

import torch


def num_scales_at(step: int, cfg) -> int:
    frac = step / max(cfg.total_steps, 1)
    return int(math.ceil(math.sqrt(frac * ((cfg.s1 + 1) ** 2 - cfg.s0 ** 2) + cfg.s0 ** 2) - 1)) + 1


def target_ema_decay(step: int, cfg) -> float:
    n = num_scales_at(step, cfg)
    return math.exp(cfg.s0 * math.log(cfg.mu0) / n)


def karras_sigmas(n: int, sigma_min: float, sigma_max: float, rho: float, device=None) -> torch.Tensor:
    ramp = torch.linspace(0, 1, n, device=device)
    min_inv, max_inv = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    return (min_inv + ramp * (max_inv - min_inv)) ** rho
