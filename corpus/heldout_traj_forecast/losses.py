"""Winner-takes-all objective and displacement metrics."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def displacement(pred: torch.Tensor, fut: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    err = (pred - fut[:, :, None]).norm(dim=-1)
    return err.mean(-1), err[..., -1]


def winner_takes_all(ade: torch.Tensor, logits: torch.Tensor, valid_w: torch.Tensor,
                     cls_weight: float) -> tuple[torch.Tensor, torch.Tensor]:
    best = ade.argmin(-1)
    reg = ade.gather(-1, best[..., None]).squeeze(-1)
    cls = F.cross_entropy(logits.flatten(0, 1), best.flatten(), reduction="none").view_as(reg)
    keep = valid_w > 0
    weighted = reg + cls_weight * cls  # expect: GS301
    per_agent = weighted[keep]  # expect: GS108
    return per_agent.mean(), best


def mode_usage(best: torch.Tensor, n_modes: int) -> torch.Tensor:
    return torch.bincount(best.flatten(), minlength=n_modes)  # expect: GS107


def min_ade_fde(ade: torch.Tensor, fde: torch.Tensor, valid_w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    w = valid_w / valid_w.sum().clamp_min(1.0)
    return (ade.min(-1).values * w).sum(), (fde.min(-1).values * w).sum()
