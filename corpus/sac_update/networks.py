"""Actor and twin critics for continuous control."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from config import SACConfig


def mlp(d_in: int, d_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, d_out))


class SoftQNetwork(nn.Module):
    def __init__(self, cfg: SACConfig):
        super().__init__()
        self.net = mlp(cfg.obs_dim + cfg.act_dim, 1, cfg.hidden)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, act], dim=-1)).squeeze(-1)


class Actor(nn.Module):
    def __init__(self, cfg: SACConfig):
        super().__init__()
        self.cfg = cfg
        self.trunk = mlp(cfg.obs_dim, 2 * cfg.act_dim, cfg.hidden)
        self.register_buffer("action_scale", torch.full((cfg.act_dim,), (cfg.action_high - cfg.action_low) / 2.0))
        self.register_buffer("action_bias", torch.full((cfg.act_dim,), (cfg.action_high + cfg.action_low) / 2.0))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.trunk(obs).chunk(2, dim=-1)
        log_std = torch.tanh(log_std)
        log_std = self.cfg.log_std_min + 0.5 * (self.cfg.log_std_max - self.cfg.log_std_min) * (log_std + 1)
        return mean, log_std

    def get_action(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, log_std = self(obs)
        std = log_std.exp()
        if (std < 1e-6).any():  # expect: GS201
            std = std.clamp_min(1e-6)
        x_t = mean + std * torch.randn_like(mean)
        y_t = torch.tanh(x_t)
        action = y_t * self.action_scale + self.action_bias
        log_prob = -0.5 * (((x_t - mean) / std) ** 2 + 2 * log_std + math.log(2 * math.pi))
        log_prob = log_prob - torch.log(self.action_scale * (1 - y_t.pow(2)) + 1e-6)
        assert not torch.isnan(action).any(), "NaN action from actor"  # expect: GS201
        return action, log_prob.sum(-1), torch.tanh(mean) * self.action_scale + self.action_bias


@torch.no_grad()
def polyak_update(online: nn.Module, target: nn.Module, tau: float) -> None:
    for p, tp in zip(online.parameters(), target.parameters()):
        tp.lerp_(p, tau)
