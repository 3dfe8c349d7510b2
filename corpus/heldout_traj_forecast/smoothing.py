"""Temporal smoothing of predicted trajectories."""

from __future__ import annotations

import torch


def smooth_trajectories(pred: torch.Tensor, alpha: float = 0.5) -> torch.Tensor:
    out = pred.clone()
    out[..., 1:-1, :] = alpha * pred[..., 1:-1, :] + 0.5 * (1 - alpha) * (pred[..., :-2, :] + pred[..., 2:, :])
    return out
