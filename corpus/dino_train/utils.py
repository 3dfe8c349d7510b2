"""Gradient utilities in the style of the DINO reference code."""

from __future__ import annotations

import torch
import torch.nn as nn


def clip_gradients(model: nn.Module, clip: float) -> list[float]:
    norms = []
    for _, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())  # expect: GS101
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:  # expect: GS201
                p.grad.data.mul_(clip_coef)
    return norms


def cancel_gradients_last_layer(epoch: int, model: nn.Module, freeze_last_layer: int) -> None:
    if epoch >= freeze_last_layer:  # expect: GS301
        return
    for n, p in model.named_parameters():
        if "last_layer" in n and p.grad is not None:
            p.grad.zero_()


def param_groups_for_decay(model: nn.Module) -> list[dict]:
    regularized, not_regularized = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if name.endswith(".bias") or len(param.shape) == 1:
            not_regularized.append(param)
        else:
            regularized.append(param)
    return [{"params": regularized}, {"params": not_regularized, "weight_decay": 0.0}]
