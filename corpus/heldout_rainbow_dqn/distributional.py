"""Categorical (C51) projection of the n-step Bellman target onto the fixed support."""

from __future__ import annotations

import torch


def project_distribution(
    next_probs: torch.Tensor,
    returns: torch.Tensor,
    dones: torch.Tensor,
    gamma_n: float,
    support: torch.Tensor,
    cfg,
) -> torch.Tensor:
    atoms = support.shape[0]
    delta_z = (cfg.v_max - cfg.v_min) / (atoms - 1)
    tz = (returns[:, None] + gamma_n * (1.0 - dones[:, None]) * support[None]).clamp(cfg.v_min, cfg.v_max)
    b = (tz - cfg.v_min) / delta_z
    assert not torch.isnan(b).any(), "NaN in the projected support"  # expect: GS201
    lower = b.floor().long()
    upper = b.ceil().long()
    lower = torch.where((upper > 0) & (lower == upper), lower - 1, lower)
    upper = torch.where((lower < atoms - 1) & (lower == upper), upper + 1, upper)
    offset = (torch.arange(next_probs.shape[0], device=next_probs.device) * atoms)[:, None]
    proj = torch.zeros_like(next_probs)
    proj.view(-1).index_add_(0, (lower + offset).view(-1), (next_probs * (upper.float() - b)).view(-1))
    proj.view(-1).index_add_(0, (upper + offset).view(-1), (next_probs * (b - lower.float())).view(-1))
    return proj
