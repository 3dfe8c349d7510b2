"""Mask helpers called from the model (so they are reachable from the capture region)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """True where a real token is."""
    return tokens != pad_id


def masked_mean(h: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    if mask is None:
        return h.mean(dim=1)
    if mask.dtype != torch.bool:
        mask = mask.bool()
    w = mask.unsqueeze(-1).to(h.dtype)
    return (h * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)


def first_positions(mask: torch.Tensor, max_items: int) -> torch.Tensor:
    """Indices of the first `max_items` True entries, padded with -1: a fixed-size nonzero."""
    return torch.nonzero_static(mask.flatten(), size=max_items, fill_value=-1).squeeze(-1)


def class_balance(labels: torch.Tensor, n_classes: int) -> torch.Tensor:
    counts = F.one_hot(labels, num_classes=n_classes).sum(dim=0)
    return torch.where(counts > 0, counts.float(), torch.ones_like(counts, dtype=torch.float))


def expand_rows(x: torch.Tensor, repeats: torch.Tensor, total: int) -> torch.Tensor:
    return x.repeat_interleave(repeats, dim=0, output_size=total)
