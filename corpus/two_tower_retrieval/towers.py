from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import TowerConfig


def mlp(dims: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class UserTower(nn.Module):
    def __init__(self, cfg: TowerConfig):
        super().__init__()
        self.user_emb = nn.Embedding(cfg.num_users, cfg.embed_dim, sparse=True)
        self.history_emb = nn.EmbeddingBag(cfg.num_items + 1, cfg.embed_dim, mode="mean", sparse=True, padding_idx=0)
        self.mlp = mlp((2 * cfg.embed_dim,) + cfg.hidden)

    def forward(self, user_ids: torch.Tensor, history: torch.Tensor) -> torch.Tensor:
        user = self.user_emb(user_ids)
        if not history.any():  # expect: GS201
            hist = torch.zeros_like(user)
        else:
            hist = self.history_emb(history)
        h = torch.cat([user, hist], -1)
        return F.normalize(self.mlp(h), dim=-1)


class ItemTower(nn.Module):
    def __init__(self, cfg: TowerConfig):
        super().__init__()
        self.item_emb = nn.Embedding(cfg.num_items, cfg.embed_dim, sparse=True)
        self.mlp = mlp((cfg.embed_dim,) + cfg.hidden)

    def forward(self, item_ids: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.mlp(self.item_emb(item_ids)), dim=-1)


class TwoTower(nn.Module):
    def __init__(self, cfg: TowerConfig, init_temperature: float):
        super().__init__()
        self.users = UserTower(cfg)
        self.items = ItemTower(cfg)
        self.log_temperature = nn.Parameter(torch.tensor(init_temperature).log())

    @property
    def temperature(self) -> torch.Tensor:
        return self.log_temperature.exp()

    def sparse_parameters(self):
        return [self.users.user_emb.weight, self.users.history_emb.weight, self.items.item_emb.weight]

    def dense_parameters(self):
        sparse = {id(p) for p in self.sparse_parameters()}
        return [p for p in self.parameters() if id(p) not in sparse]
