"""Adversarial losses and the two regularisers (lazy R1, path length)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def d_logistic_loss(real_logits: torch.Tensor, fake_logits: torch.Tensor) -> torch.Tensor:
    return F.softplus(fake_logits).mean() + F.softplus(-real_logits).mean()


def g_nonsaturating_loss(fake_logits: torch.Tensor) -> torch.Tensor:
    return F.softplus(-fake_logits).mean()


def r1_penalty(real_img: torch.Tensor, real_logits: torch.Tensor, gamma: float) -> torch.Tensor:
    (grad,) = torch.autograd.grad(real_logits.sum(), real_img, create_graph=True)
    penalty = grad.square().sum([1, 2, 3])
    if penalty.isnan().any() or penalty.isinf().any():  # expect: GS201
        raise FloatingPointError("R1 penalty is not finite")
    return penalty.mean() * (gamma / 2)


class PathLengthRegularizer(nn.Module):
    """Penalises deviation of |J^T y| from its running mean."""

    def __init__(self, decay: float):
        super().__init__()
        self.decay = decay
        self.register_buffer("pl_mean", torch.zeros(()))

    def forward(self, fake: torch.Tensor, ws: torch.Tensor) -> torch.Tensor:
        noise = torch.randn_like(fake) / math.sqrt(fake.shape[2] * fake.shape[3])
        (grad,) = torch.autograd.grad((fake * noise).sum(), ws, create_graph=True)
        lengths = grad.square().sum(2).mean(1).sqrt()
        self.pl_mean = self.pl_mean.lerp(lengths.mean().detach(), self.decay)  # expect: GS401
        return (lengths - self.pl_mean).square().mean()
