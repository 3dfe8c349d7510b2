"""Row-wise CutMix for tabular batches."""

from __future__ import annotations

import torch


def cutmix_rows(tokens: torch.Tensor, perm: torch.Tensor, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    n_tok = tokens.shape[1]
    cut = lam * n_tok
    keep = torch.arange(n_tok, device=tokens.device) < cut  # expect: GS301
    keep = keep.view(1, -1, 1)
    mixed = torch.where(keep, tokens, tokens[perm])
    return mixed, keep.float().mean()


def mix_targets(y_onehot: torch.Tensor, perm: torch.Tensor, ratio: torch.Tensor) -> torch.Tensor:
    return ratio * y_onehot + (1 - ratio) * y_onehot[perm]
