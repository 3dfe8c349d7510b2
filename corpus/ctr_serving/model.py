"""A small DCN-style CTR model with hashed embedding bags."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import ServingConfig


class CrossLayer(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.w = nn.Linear(dim, dim)

    def forward(self, x0: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return x0 * self.w(x) + x


class CTRModel(nn.Module):
    def __init__(self, cfg: ServingConfig):
        super().__init__()
        self.cfg = cfg
        self.tables = nn.ModuleList(
            [nn.EmbeddingBag(cfg.num_buckets, cfg.embed_dim, mode="sum", padding_idx=0) for _ in range(cfg.num_sparse)]
        )
        dim = cfg.num_dense + cfg.num_sparse * cfg.embed_dim
        self.cross1 = CrossLayer(dim)
        self.cross2 = CrossLayer(dim)
        self.deep = nn.Sequential(nn.Linear(dim, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU())
        self.head = nn.Linear(dim + cfg.hidden, 1)

    def forward(self, dense: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 3 or ids.shape[1] != len(self.tables):
            raise ValueError(f"expected ids [B, {len(self.tables)}, L], got {tuple(ids.shape)}")
        assert (ids >= 0).all(), "negative hashed id"  # expect: GS201
        ids = ids if (ids < self.cfg.num_buckets).all() else ids.clamp(max=self.cfg.num_buckets - 1)  # expect: GS201
        pooled = [table(ids[:, f]) for f, table in enumerate(self.tables)]
        x0 = torch.cat([dense] + pooled, dim=-1)
        x = self.cross2(x0, self.cross1(x0, x0))
        return self.head(torch.cat([x, self.deep(x0)], dim=-1)).squeeze(-1)
