"""Focal, dice and IoU-regression losses."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def focal_loss(logits: torch.Tensor, target: torch.Tensor, gamma: float = 2.0, alpha: float = 0.25):
    prob = logits.sigmoid()
    ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    p_t = prob * target + (1 - prob) * (1 - target)
    loss = ce * (1 - p_t) ** gamma
    alpha_t = alpha * target + (1 - alpha) * (1 - target)
    return (alpha_t * loss).flatten(2).mean(-1)


def dice_loss(logits: torch.Tensor, target: torch.Tensor, eps: float = 1.0):
    prob = logits.sigmoid().flatten(2)
    tgt = target.flatten(2)
    num = 2 * (prob * tgt).sum(-1)
    den = prob.sum(-1) + tgt.sum(-1)
    eps = eps if tgt.sum() > 0 else 1e-3  # expect: GS201
    return 1 - (num + eps) / (den + eps)


def mask_iou(logits: torch.Tensor, target: torch.Tensor):
    pred = (logits > 0).float().flatten(2)
    tgt = target.flatten(2)
    inter = (pred * tgt).sum(-1)
    union = pred.sum(-1) + tgt.sum(-1) - inter
    return inter / union.clamp(min=1.0)


def check_finite(loss: torch.Tensor) -> torch.Tensor:
    assert torch.isfinite(loss).all(), "non-finite loss"  # expect: GS201
    return loss
