from __future__ import annotations

import torch


def stratified_samples(rays: torch.Tensor, near_far: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    t = torch.linspace(0.0, 1.0, n + 1, device=rays.device)
    near, far = near_far[0], near_far[1]
    lower = near + (far - near) * t[:-1]
    upper = near + (far - near) * t[1:]
    u = torch.rand(rays.shape[0], n, device=rays.device, generator=gen)
    return lower + (upper - lower) * u


def sample_pdf(bins: torch.Tensor, weights: torch.Tensor, n_samples: int, gen: torch.Generator) -> torch.Tensor:
    if (weights.sum(-1) == 0).any():  # expect: GS201
        weights = weights + 1e-5
    pdf = weights / weights.sum(-1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    u = torch.rand(cdf.shape[0], n_samples, device=cdf.device, generator=gen).contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = (inds - 1).clamp(min=0)
    above = inds.clamp(max=cdf.shape[-1] - 1)
    cdf_lo, cdf_hi = cdf.gather(-1, below), cdf.gather(-1, above)
    bins_lo = bins.gather(-1, below.clamp(max=bins.shape[-1] - 1))
    bins_hi = bins.gather(-1, above.clamp(max=bins.shape[-1] - 1))
    denom = torch.where(cdf_hi - cdf_lo < 1e-5, torch.ones_like(cdf_hi), cdf_hi - cdf_lo)
    return bins_lo + (u - cdf_lo) / denom * (bins_hi - bins_lo)


def points_along(rays: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    return rays[:, None, :3] + rays[:, None, 3:] * z[..., None]
