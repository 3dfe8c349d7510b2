"""Losses and gradient utilities."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


def smoothed_cross_entropy(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> torch.Tensor:
    num_classes = logits.shape[-1]
    if target.dim() == 1:
        target = F.one_hot(target, num_classes=num_classes).to(logits.dtype)
    target = target * (1.0 - smoothing) + smoothing / num_classes
    return torch.sum(-target * F.log_softmax(logits.float(), dim=-1), dim=-1).mean()


def clip_gradients(params, max_norm: float) -> torch.Tensor:
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm, error_if_nonfinite=True)  # expect: GS110
    if norm > 4 * max_norm:  # expect: GS201
        warnings.warn("gradient norm spiked well above the clipping threshold")  # expect: GS501
    return norm
