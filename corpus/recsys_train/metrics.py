"""Metric sinks and a binned AUC."""

from __future__ import annotations

import torch


class MetricsLogger:
    def __init__(self):
        self.records: list[dict] = []

    def log(self, values: dict, step: int | None = None) -> None:
        self.records.append({"step": step, **values})


def binned_auc(pos_hist: torch.Tensor, neg_hist: torch.Tensor) -> float:
    pos = pos_hist.double().flip(0)
    neg = neg_hist.double().flip(0)
    tp = torch.cumsum(pos, 0)
    fp = torch.cumsum(neg, 0)
    tpr = torch.cat([torch.zeros(1, dtype=torch.double), tp / tp[-1].clamp_min(1)])
    fpr = torch.cat([torch.zeros(1, dtype=torch.double), fp / fp[-1].clamp_min(1)])
    return float(torch.trapz(tpr, fpr))


def score_bins(scores: torch.Tensor, n_bins: int) -> torch.Tensor:
    return (torch.sigmoid(scores) * n_bins).long().clamp_(0, n_bins - 1)
