"""Token-level label-smoothed cross-entropy used as an auxiliary loss next to the CRF."""

from __future__ import annotations

import torch


def label_smoothed_ce(logits: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, eps: float) -> torch.Tensor:
    logp = logits.log_softmax(-1)
    nll = -logp.gather(-1, target[..., None]).squeeze(-1)
    smooth = -logp.mean(-1)
    per_token = (1.0 - eps) * nll + eps * smooth
    denom = mask.sum()
    return (per_token * mask).sum() / denom if denom > 0 else per_token.sum() * 0.0  # expect: GS201
