"""User and item towers."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import RecConfig
from features import HashedFeatures, pool_histories


class TwoTower(nn.Module):
    def __init__(self, cfg: RecConfig):
        super().__init__()
        self.user_emb = nn.Embedding(cfg.num_users, cfg.dim)
        self.item_emb = nn.Embedding(cfg.num_items, cfg.dim, padding_idx=0)
        self.features = HashedFeatures(cfg.features, cfg.dim)
        n_feat = len(cfg.features.names)
        self.user_mlp = nn.Sequential(nn.Linear(cfg.dim * (2 + n_feat), 32), nn.ReLU(), nn.Linear(32, cfg.dim))
        self.item_mlp = nn.Sequential(nn.Linear(cfg.dim, 32), nn.ReLU(), nn.Linear(32, cfg.dim))

    def sparse_parameters(self):
        yield from self.user_emb.parameters()
        yield from self.item_emb.parameters()
        yield from self.features.parameters()

    def dense_parameters(self):
        yield from self.user_mlp.parameters()
        yield from self.item_mlp.parameters()

    def user_vector(self, users, feat_ids, feat_lengths, histories: list[torch.Tensor]) -> torch.Tensor:
        hist = pool_histories(self.item_emb, histories)
        feats = self.features(feat_ids, feat_lengths)
        return self.user_mlp(torch.cat([self.user_emb(users), hist, feats], dim=-1))

    def item_vector(self, items: torch.Tensor) -> torch.Tensor:
        return self.item_mlp(self.item_emb(items))
