"""A tiny point-mass environment driven towards a goal."""

from __future__ import annotations

import torch


class PointMass:
    def __init__(self, obs_dim: int, act_dim: int, goal: list[float], seed: int):
        self.gen = torch.Generator().manual_seed(seed)
        self.obs_dim = obs_dim
        self.act_dim = act_dim
        self.goal = torch.tensor(goal)
        self.state = torch.zeros(obs_dim)

    def reset(self) -> torch.Tensor:
        self.state = torch.randn(self.obs_dim, generator=self.gen) * 0.1
        return self.state.clone()

    def step(self, action: torch.Tensor):
        pos = self.state[: self.act_dim] + 0.1 * action
        vel = action.clone()
        self.state = torch.cat([pos, vel])[: self.obs_dim]
        reward = -float((self.state - self.goal).pow(2).sum())
        return self.state.clone(), reward
