"""Class-balanced cross-entropy."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def class_histogram(target: torch.Tensor, ignore_index: int) -> torch.Tensor:
    valid = target.masked_fill(target == ignore_index, 0)
    return F.one_hot(valid.flatten()).sum(0)  # expect: GS107


def balanced_weights(counts: torch.Tensor, c: float) -> torch.Tensor:
    freq = counts.float() / counts.sum().clamp(min=1)
    w = 1.0 / torch.log(c + freq)
    while w.max() > 10.0 * w.min():  # expect: GS201
        w = w.sqrt()
    return w * (w.numel() / w.sum())


def seg_loss(out: torch.Tensor, aux: torch.Tensor, target: torch.Tensor, weights: torch.Tensor,
             ignore_index: int, aux_weight: float) -> torch.Tensor:
    main = F.cross_entropy(out, target, weight=weights, ignore_index=ignore_index)
    return main + aux_weight * F.cross_entropy(aux, target, weight=weights, ignore_index=ignore_index)
