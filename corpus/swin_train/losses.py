"""Label-smoothed, class-weighted cross entropy with ignored targets."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def smoothed_ce(logits: torch.Tensor, target: torch.Tensor, smoothing: float, class_weights: tuple) -> torch.Tensor:
    weights = torch.tensor(class_weights, dtype=logits.dtype, device=logits.device)  # expect: GS402
    n = logits.shape[-1]
    logp = F.log_softmax(logits.float(), dim=-1)
    safe_target = target.clamp(min=0)
    nll = -logp.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)
    if smoothing > 0.0:
        smooth = -logp.mean(-1)
        per_sample = (1.0 - smoothing) * nll + smoothing * smooth
    else:
        per_sample = nll
    per_sample = per_sample * weights[safe_target]
    valid = target >= 0
    if (target >= n).any():  # expect: GS201
        raise ValueError("label out of range")
    if n < 2:
        raise ValueError("need at least two classes")
    return per_sample[valid].mean()  # expect: GS108
