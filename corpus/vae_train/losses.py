"""ELBO with KL annealing and free bits."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class ELBOTerms:
    loss: torch.Tensor
    recon: torch.Tensor
    kl: torch.Tensor
    kl_per_dim: torch.Tensor


def kl_divergence(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    return -0.5 * (1 + logvar - mu.pow(2) - logvar.exp())


def elbo(recon_logits: torch.Tensor, x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, kl_weight: float, free_bits: float) -> ELBOTerms:
    recon = F.binary_cross_entropy_with_logits(recon_logits, x, reduction="none").flatten(1).sum(-1).mean()
    kl_per_dim = kl_divergence(mu, logvar).mean(0)
    kl = torch.clamp(kl_per_dim, min=free_bits).sum()
    loss = recon + kl_weight * kl  # expect: GS301
    return ELBOTerms(loss=loss, recon=recon, kl=kl_per_dim.sum(), kl_per_dim=kl_per_dim)


def active_units(kl_per_dim: torch.Tensor, threshold: float) -> torch.Tensor:
    (active,) = torch.where(kl_per_dim > threshold)  # expect: GS107
    return active.numel() / kl_per_dim.numel() * torch.ones((), device=kl_per_dim.device)
