"""Feature hashing and bag trimming for sparse id lists."""

from __future__ import annotations

import torch


def hash_ids(raw_ids: torch.Tensor, num_buckets: int, mult: int, add: int) -> torch.Tensor:
    hashed = torch.remainder(raw_ids * (mult % 1_000_003) + add, num_buckets - 1) + 1
    return torch.where(raw_ids < 0, torch.zeros_like(hashed), hashed)


def trim_bags(ids: torch.Tensor) -> torch.Tensor:
    lengths = (ids > 0).sum(-1)
    max_len = int(lengths.max())  # expect: GS105
    return ids[..., :max_len]  # expect: GS301
