"""A tiny deterministic chain environment."""

from __future__ import annotations

import random

import torch


class Chain:
    def __init__(self, obs_dim: int, n_actions: int, seed: int, horizon: int = 12):
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        self.horizon = horizon
        self.rng = random.Random(seed)
        self.pos = 0
        self.t = 0

    def observe(self) -> torch.Tensor:
        o = torch.zeros(self.obs_dim)
        o[self.pos % self.obs_dim] = 1.0
        o[-1] = self.t / self.horizon
        return o

    def reset(self) -> torch.Tensor:
        self.pos, self.t = self.rng.randrange(self.obs_dim), 0
        return self.observe()

    def step(self, action: int):
        self.t += 1
        self.pos += 1 if action == 0 else -1
        reward = 1.0 if self.pos % self.obs_dim == self.obs_dim - 1 else -0.05
        return self.observe(), reward, self.t >= self.horizon
