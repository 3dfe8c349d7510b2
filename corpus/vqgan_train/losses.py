"""GAN losses and the adaptive generator weight of taming-transformers."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def hinge_d_loss(logits_real: torch.Tensor, logits_fake: torch.Tensor) -> torch.Tensor:
    return 0.5 * (F.relu(1.0 - logits_real).mean() + F.relu(1.0 + logits_fake).mean())


def adopt_weight(weight: float, global_step: int, threshold: int = 0, value: float = 0.0) -> float:
    if global_step < threshold:
        weight = value
    return weight


def adaptive_weight(nll_loss: torch.Tensor, g_loss: torch.Tensor, last_layer: torch.Tensor,
                    disc_weight: float) -> torch.Tensor:
    nll_grads = torch.autograd.grad(nll_loss, last_layer, retain_graph=True)[0]
    g_grads = torch.autograd.grad(g_loss, last_layer, retain_graph=True)[0]
    d_weight = torch.norm(nll_grads) / (torch.norm(g_grads) + 1e-4)
    if torch.isnan(d_weight):  # expect: GS201
        d_weight = torch.zeros_like(d_weight)
    d_weight = torch.clamp(d_weight, 0.0, 1e4).detach()
    return d_weight * disc_weight
