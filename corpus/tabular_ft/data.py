"""Synthetic imbalanced tabular data with a weighted sampler."""

from __future__ import annotations

import torch

from config import FTConfig


def make_table(cfg: FTConfig, n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x_num = torch.randn(n, cfg.n_numeric, generator=g)
    x_cat = torch.stack([torch.randint(0, c, (n,), generator=g) for c in cfg.cat_cardinalities], dim=1)
    score = x_num[:, 0] + 0.5 * x_num[:, 1] + (x_cat[:, 0] == 1).float()
    y = (score > 1.2).long()
    return x_num, x_cat, y


def weighted_batches(x_num, x_cat, y, cfg: FTConfig, n_batches: int, gen: torch.Generator):
    counts = torch.bincount(y, minlength=cfg.n_classes).clamp(min=1)
    weights = (1.0 / counts.float())[y]
    batches = []
    for _ in range(n_batches):
        idx = torch.multinomial(weights, cfg.batch_size, replacement=True, generator=gen)
        batches.append((x_num[idx], x_cat[idx], y[idx]))
    return batches, counts.tolist()
