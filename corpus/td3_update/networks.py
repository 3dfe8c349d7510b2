"""Actor and twin-critic networks."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import TD3Config


def mlp(inp: int, out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out))


class Actor(nn.Module):
    def __init__(self, cfg: TD3Config):
        super().__init__()
        self.net = mlp(cfg.obs_dim, cfg.act_dim, cfg.hidden)
        self.max_action = cfg.max_action
        self.register_buffer("obs_mean", torch.zeros(cfg.obs_dim))
        self.register_buffer("obs_std", torch.ones(cfg.obs_dim))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dim() == 1:
            obs = obs[None]
        assert torch.isfinite(obs).all(), "non-finite observation"  # expect: GS201
        obs = (obs - self.obs_mean) / self.obs_std
        return self.max_action * torch.tanh(self.net(obs))


class TwinCritic(nn.Module):
    def __init__(self, cfg: TD3Config):
        super().__init__()
        self.q1_net = mlp(cfg.obs_dim + cfg.act_dim, 1, cfg.hidden)
        self.q2_net = mlp(cfg.obs_dim + cfg.act_dim, 1, cfg.hidden)

    def forward(self, obs: torch.Tensor, action: torch.Tensor):
        sa = torch.cat([obs, action], dim=-1)
        return self.q1_net(sa), self.q2_net(sa)

    def q1(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.q1_net(torch.cat([obs, action], dim=-1))
