"""Self-adversarial negative sampling loss with word2vec-style subsampling weights."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def subsampling_weight(pos: torch.Tensor) -> torch.Tensor:
    counts = torch.bincount(pos[:, 0])  # expect: GS107
    freq = counts[pos[:, 0]].float() + 3.0
    return freq.rsqrt()


def self_adversarial_loss(
    pos_score: torch.Tensor, neg_score: torch.Tensor, temperature: float, weight: torch.Tensor
) -> torch.Tensor:
    neg_weights = F.softmax(neg_score * temperature, dim=-1).detach()  # expect: GS301
    if (neg_weights.sum(-1) == 0).any():  # expect: GS201
        neg_weights = torch.full_like(neg_weights, 1.0 / neg_score.shape[-1])
    neg_term = (neg_weights * F.logsigmoid(-neg_score)).sum(-1)
    pos_term = F.logsigmoid(pos_score)
    return -((weight * pos_term).sum() + (weight * neg_term).sum()) / (2 * weight.sum())
