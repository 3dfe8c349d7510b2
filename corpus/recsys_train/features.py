"""Feature hashing and history pooling."""

from __future__ import annotations

import zlib

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence

from config import FeatureConfig


class HashedFeatures(nn.Module):
    def __init__(self, cfg: FeatureConfig, dim: int):
        super().__init__()
        self.cfg = cfg
        self.salts = [zlib.crc32(n.encode()) % 1000 for n in cfg.names]
        self.bags = nn.ModuleList([nn.EmbeddingBag(cfg.num_buckets, dim, mode="sum") for _ in cfg.names])
        self._offset_cache: dict = {}

    def bucket(self, ids: torch.Tensor, salt: int) -> torch.Tensor:
        return (ids * self.cfg.hash_mult + self.cfg.hash_add + salt) % self.cfg.num_buckets

    def offsets_for(self, lengths: torch.Tensor) -> torch.Tensor:
        cached = self._offset_cache.get(id(lengths))  # expect: GS506
        if cached is None:
            cached = torch.cumsum(lengths, 0) - lengths
            self._offset_cache[id(lengths)] = cached  # expect: GS503, GS506
        return cached

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2 or ids.shape[0] != len(self.bags):
            raise ValueError(f"expected ({len(self.bags)}, N) ids, got {tuple(ids.shape)}")
        offsets = self.offsets_for(lengths)
        pooled = [bag(self.bucket(ids[i], salt), offsets) for i, (bag, salt) in enumerate(zip(self.bags, self.salts))]
        return torch.cat(pooled, dim=-1)


def pool_histories(item_emb: nn.Embedding, histories: list[torch.Tensor]) -> torch.Tensor:
    padded = pad_sequence(histories, batch_first=True, padding_value=0)  # expect: GS408
    mask = (padded > 0).unsqueeze(-1).float()
    return (item_emb(padded) * mask).sum(1) / mask.sum(1).clamp_min(1.0)
