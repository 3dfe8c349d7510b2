from __future__ import annotations

import math

import torch


def batch_hit_rate(scores: torch.Tensor, targets: torch.Tensor, k: int) -> torch.Tensor:
    top = scores.topk(k, dim=-1).indices
    hits = (top == targets[:, None]).any(-1)
    return hits.float().mean().cpu()  # expect: GS103


def ndcg_hr_at_k(scores: torch.Tensor, targets: torch.Tensor, k: int) -> tuple[float, float]:
    ranks = (scores > scores.gather(1, targets[:, None])).sum(-1)
    ndcg, hr = 0.0, 0.0
    for r in ranks.cpu().tolist():
        if r < k:
            hr += 1.0
            ndcg += 1.0 / math.log2(r + 2)
    n = scores.shape[0]
    return ndcg / n, hr / n


class EarlyStopper:
    def __init__(self, patience: int):
        self.patience = patience
        self.best = -1.0
        self.bad = 0

    def update(self, metric: float) -> bool:
        if metric > self.best:
            self.best, self.bad = metric, 0
        else:
            self.bad += 1
        return self.bad >= self.patience
