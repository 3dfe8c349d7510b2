"""A deterministic toy continuous-control task: drive a point towards a moving target."""

from __future__ import annotations

import torch


class PointChase:
    def __init__(self, obs_dim: int, act_dim: int, seed: int, horizon: int = 20):
        self.g = torch.Generator().manual_seed(seed)
        self.obs_dim = obs_dim
        self.act_dim = act_dim
        self.horizon = horizon
        self.t = 0
        self.state = torch.zeros(obs_dim)

    def reset(self) -> torch.Tensor:
        self.t = 0
        self.state = torch.rand(self.obs_dim, generator=self.g) * 2 - 1
        return self.state.clone()

    def step(self, action: torch.Tensor):
        self.t += 1
        self.state[: self.act_dim] += 0.1 * action
        self.state[self.act_dim :] = 0.95 * self.state[self.act_dim :]
        reward = -float(self.state[: self.act_dim].pow(2).sum())
        done = self.t >= self.horizon
        return self.state.clone(), reward, done
