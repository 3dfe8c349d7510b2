"""Distogram, FAPE-like and structural violation losses."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from config import LossConfig


def pairwise_mask(mask: torch.Tensor) -> torch.Tensor:
    return mask[:, :, None] * mask[:, None, :]


def distogram_loss(logits: torch.Tensor, coords: torch.Tensor, mask: torch.Tensor, cfg: LossConfig) -> torch.Tensor:
    d = torch.cdist(coords, coords)
    edges = torch.tensor(cfg.bin_edges, device=coords.device)  # expect: GS402
    target = torch.bucketize(d, edges)
    pm = pairwise_mask(mask)
    ce = F.cross_entropy(logits.permute(0, 3, 1, 2), target, reduction="none")
    return (ce * pm).sum() / pm.sum().clamp_min(1.0)


def fape_loss(pred: torch.Tensor, true: torch.Tensor, mask: torch.Tensor, clamp: float) -> torch.Tensor:
    local_pred = pred[:, :, None] - pred[:, None]
    local_true = true[:, :, None] - true[:, None]
    err = (local_pred - local_true).norm(dim=-1).clamp_max(clamp)
    frame_mask = pairwise_mask(mask)
    resolved = err[frame_mask > 0.5]  # expect: GS108
    return resolved.mean() / clamp


def violation_loss(coords: torch.Tensor, ideal: float = 3.8) -> torch.Tensor:
    bond = (coords[:, 1:] - coords[:, :-1]).norm(dim=-1)
    return F.relu((bond - ideal).abs() - 0.2).mean()


def plddt_loss(plddt_logits: torch.Tensor, pred: torch.Tensor, true: torch.Tensor) -> torch.Tensor:
    n_bins = plddt_logits.shape[-1]
    lddt = torch.exp(-(pred - true).norm(dim=-1) / 4.0)
    target = (lddt * n_bins).long().clamp(0, n_bins - 1)
    onehot = F.one_hot(target, num_classes=n_bins).float()
    return -(onehot * plddt_logits.log_softmax(-1)).sum(-1).mean()
