"""Actor and critic MLPs for goal-conditioned DDPG."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out))


class Actor(nn.Module):
    def __init__(self, obs_dim: int, goal_dim: int, act_dim: int, hidden: int, max_u: float):
        super().__init__()
        self.net = mlp(obs_dim + goal_dim, hidden, act_dim)
        self.max_u = max_u

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.max_u * torch.tanh(self.net(inputs))


class Critic(nn.Module):
    def __init__(self, obs_dim: int, goal_dim: int, act_dim: int, hidden: int, max_u: float, use_checkpoint: bool):
        super().__init__()
        self.body = mlp(obs_dim + goal_dim + act_dim, hidden, 1)
        self.max_u = max_u
        self.use_checkpoint = use_checkpoint

    def forward(self, inputs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        if inputs.dim() == 1:
            inputs = inputs.unsqueeze(0)
        if (actions.abs() > self.max_u + 1e-6).any():  # expect: GS201
            actions = actions.clamp(-self.max_u, self.max_u)
        x = torch.cat([inputs, actions / self.max_u], dim=-1)
        if self.use_checkpoint and self.training:
            return checkpoint(self.body, x, use_reentrant=False)  # expect: GS603
        return self.body(x)
