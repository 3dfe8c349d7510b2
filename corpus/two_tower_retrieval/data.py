from __future__ import annotations

import torch

from config import RetrievalConfig
from trainer import Batch


def synthetic_interactions(cfg: RetrievalConfig, num_batches: int, seed: int) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    t = cfg.towers
    batches = []
    for _ in range(num_batches):
        users = torch.randint(0, t.num_users, (cfg.batch_size,), generator=g)
        items = (users * 2 + torch.randint(0, 3, (cfg.batch_size,), generator=g)) % t.num_items
        lengths = torch.randint(1, t.history_len + 1, (cfg.batch_size,), generator=g).tolist()
        histories = [torch.randint(0, t.num_items, (n,), generator=g).tolist() for n in lengths]
        batches.append(Batch(users, items, histories))
    return batches
