from __future__ import annotations

import torch


class InteractionLog:
    def __init__(self, n_users: int, n_items: int, min_hist: int, max_hist: int, gen: torch.Generator):
        self.n_items = n_items
        self.histories = []
        for _ in range(n_users):
            n = int(torch.randint(min_hist, max_hist + 1, (1,), generator=gen))
            start = int(torch.randint(1, n_items, (1,), generator=gen))
            self.histories.append(torch.tensor([1 + (start + 3 * j) % (n_items - 1) for j in range(n)]))

    def split(self):
        train = [h[:-1] for h in self.histories]
        targets = torch.stack([h[-1] for h in self.histories])
        return train, targets


def sample_batch(histories, batch_size: int, gen: torch.Generator):
    idx = torch.randperm(len(histories), generator=gen)[:batch_size].tolist()
    return [histories[i] for i in idx]


def sample_negatives(batch, n_items: int, gen: torch.Generator) -> torch.Tensor:
    longest = max(len(h) for h in batch)
    return torch.randint(1, n_items, (len(batch), longest), generator=gen)
