"""Masked, class-weighted segmentation loss."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def valid_mask(counts: list[int], device: torch.device) -> torch.Tensor:
    max_n = max(counts)
    lengths = torch.tensor(counts, device=device)  # expect: GS402
    return (torch.arange(max_n, device=device)[None] < lengths[:, None]).float()  # expect: GS408


def weighted_seg_loss(logits: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    if valid.sum() == 0:  # expect: GS201
        return logits.sum() * 0.0
    ce = F.cross_entropy(logits.transpose(1, 2), labels, weight=weights, reduction="none")
    return (ce * valid).sum() / valid.sum().clamp(min=1.0)
