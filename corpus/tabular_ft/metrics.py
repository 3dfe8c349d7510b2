"""Host-side metrics."""

from __future__ import annotations

import torch


def auroc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    order = torch.argsort(scores, descending=True)
    y = labels[order].float()
    pos = y.sum().item()
    neg = y.numel() - pos
    if pos == 0 or neg == 0:
        return 0.5
    tps = torch.cumsum(y, 0)
    fps = torch.cumsum(1 - y, 0)
    tpr = torch.cat([torch.zeros(1), tps / pos])
    fpr = torch.cat([torch.zeros(1), fps / neg])
    return float(torch.trapz(tpr, fpr))


def accuracy(pred: torch.Tensor, labels: torch.Tensor) -> float:
    return (pred == labels).float().mean().item()
