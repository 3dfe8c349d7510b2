from __future__ import annotations

import torch


def spans_from_starts(starts: torch.Tensor, span: int) -> torch.Tensor:
    mask = starts.clone()
    for k in range(1, span):
        mask[:, k:] |= starts[:, :-k]
    return mask


def masked_targets(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return values[mask.bool()]  # expect: GS108


def sample_negatives(y: torch.Tensor, num: int) -> torch.Tensor:
    n = y.shape[0]
    idx = torch.randint(0, n, (num, n), device=y.device)
    return y[idx]
