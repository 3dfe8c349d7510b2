"""k-diffusion style update rules."""

from __future__ import annotations

import torch


def ancestral_sigmas(sigma: torch.Tensor, sigma_next: torch.Tensor, eta: float):
    sigma_up = torch.minimum(sigma_next, eta * (sigma_next**2 * (sigma**2 - sigma_next**2) / sigma**2).clamp(min=0).sqrt())
    sigma_down = (sigma_next**2 - sigma_up**2).clamp(min=0).sqrt()
    return sigma_down, sigma_up


def euler_ancestral_step(x, denoised, sigma, sigma_next, noise, eta: float):
    sigma_down, sigma_up = ancestral_sigmas(sigma, sigma_next, eta)
    d = (x - denoised) / sigma
    x = x + d * (sigma_down - sigma)
    if sigma_next > 0:  # expect: GS201
        x = x + noise * sigma_up
    return x


def dpmpp_2m_step(x, denoised, old_denoised, sigma, sigma_next, sigma_prev):
    t, t_next = -sigma.log(), -sigma_next.clamp(min=1e-8).log()
    h = t_next - t
    x_next = (sigma_next / sigma) * x - torch.expm1(-h) * denoised
    if old_denoised is None or sigma_next == 0:  # expect: GS201
        return x_next
    h_last = t - (-sigma_prev.log())
    r = h_last / h
    denoised_d = (1 + 1 / (2 * r)) * denoised - (1 / (2 * r)) * old_denoised
    return (sigma_next / sigma) * x - torch.expm1(-h) * denoised_d


def rescale_noise_cfg(guided: torch.Tensor, cond: torch.Tensor, rescale: float) -> torch.Tensor:
    std_cond = cond.std(dim=(1, 2, 3), keepdim=True)
    std_guided = guided.std(dim=(1, 2, 3), keepdim=True)
    rescaled = guided * (std_cond / std_guided)
    return rescale * rescaled + (1 - rescale) * guided
