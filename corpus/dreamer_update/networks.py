"""Encoder, decoder, reward/continue heads, actor and critic."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn


def mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ELU(), nn.Linear(hidden, hidden), nn.ELU(), nn.Linear(hidden, out))


class Encoder(nn.Module):
    def __init__(self, obs_dim: int, hidden: int, embed_dim: int):
        super().__init__()
        self.net = mlp(obs_dim, hidden, embed_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class Head(nn.Module):
    def __init__(self, feat_dim: int, hidden: int, out: int = 1):
        super().__init__()
        self.net = mlp(feat_dim, hidden, out)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        out = self.net(feat)
        return out.squeeze(-1) if out.shape[-1] == 1 else out


class Actor(nn.Module):
    def __init__(self, feat_dim: int, hidden: int, act_dim: int, min_std: float = 0.1):
        super().__init__()
        self.net = mlp(feat_dim, hidden, 2 * act_dim)
        self.min_std = min_std

    def forward(self, feat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, raw = self.net(feat).chunk(2, -1)
        std = torch.sigmoid(raw) * (1.0 - self.min_std) + self.min_std
        return torch.tanh(mean), std


class Critic(nn.Module):
    def __init__(self, feat_dim: int, hidden: int):
        super().__init__()
        self.net = mlp(feat_dim, hidden, 1)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        return self.net(feat).squeeze(-1)

    def make_slow(self) -> "Critic":
        slow = copy.deepcopy(self)
        for p in slow.parameters():
            p.requires_grad_(False)
        return slow
