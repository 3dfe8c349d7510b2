"""Dynamics ensemble and reward model."""

from __future__ import annotations

import random

import torch
import torch.nn as nn

from config import PlannerConfig


class EnsembleLinear(nn.Module):
    def __init__(self, members: int, d_in: int, d_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(members, d_in, d_out) / d_in**0.5)
        self.bias = nn.Parameter(torch.zeros(members, 1, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class DynamicsEnsemble(nn.Module):
    def __init__(self, cfg: PlannerConfig):
        super().__init__()
        self.obs_dim = cfg.obs_dim
        self.members = cfg.ensemble_size
        self.l1 = EnsembleLinear(cfg.ensemble_size, cfg.obs_dim + cfg.act_dim, cfg.hidden)
        self.l2 = EnsembleLinear(cfg.ensemble_size, cfg.hidden, cfg.obs_dim)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        assert obs.shape[-1] == self.obs_dim
        x = torch.cat([obs, act], dim=-1)
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.members, -1, -1)
        delta = self.l2(torch.relu(self.l1(x)))
        if torch.isnan(delta).any():  # expect: GS201
            delta = torch.nan_to_num(delta)
        return obs + delta

    def sample_member(self, preds: torch.Tensor) -> torch.Tensor:
        k = random.randrange(self.members)  # expect: GS502
        return preds[k]  # expect: GS301 (a host draw's number, frozen where it enters device work)


class RewardModel(nn.Module):
    def __init__(self, cfg: PlannerConfig):
        super().__init__()
        self.goal = cfg.goal
        self.net = nn.Sequential(nn.Linear(cfg.obs_dim + cfg.act_dim, cfg.hidden), nn.Tanh(), nn.Linear(cfg.hidden, 1))

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        goal = torch.tensor(self.goal, device=obs.device)  # expect: GS402
        learned = self.net(torch.cat([obs, act], dim=-1)).squeeze(-1)
        shaped = -(obs - goal).pow(2).sum(-1) + learned
        crashed = shaped < -50.0
        if crashed.any():  # expect: GS201
            shaped = shaped.masked_fill(crashed, -50.0)
        return shaped
