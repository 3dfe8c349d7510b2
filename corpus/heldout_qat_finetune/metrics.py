"""Top-k accuracy."""

from __future__ import annotations

import torch


def topk_correct(logits: torch.Tensor, labels: torch.Tensor, k: int) -> torch.Tensor:
    top = logits.topk(k, dim=-1).indices
    return (top == labels[:, None]).any(dim=-1).float().sum()


def accuracy_report(logits: torch.Tensor, labels: torch.Tensor, ks: tuple[int, ...] = (1, 5)) -> dict[str, float]:
    return {f"top{k}": topk_correct(logits, labels, k).item() / labels.shape[0] for k in ks}
