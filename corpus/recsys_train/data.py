"""Synthetic interaction rows."""

from __future__ import annotations

import torch

from config import RecConfig


def synthetic_rows(cfg: RecConfig, n: int, seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        user = torch.randint(0, cfg.num_users, (), generator=g)
        item = torch.randint(1, cfg.num_items, (), generator=g)
        hist_len = int(torch.randint(1, cfg.history_len + 1, (), generator=g))
        rows.append(
            {
                "user": user,
                "item": item,
                "label": (torch.rand((), generator=g) < 0.4).float(),
                "feat_ids": torch.randint(0, 10_000, (len(cfg.features.names),), generator=g),
                "history": torch.randint(1, cfg.num_items, (hist_len,), generator=g),
            }
        )
    return rows
