"""A uniform replay buffer on the host."""

from __future__ import annotations

import torch


class ReplayBuffer:
    def __init__(self, obs_dim: int, act_dim: int, size: int):
        self.obs = torch.zeros(size, obs_dim)
        self.act = torch.zeros(size, act_dim)
        self.rew = torch.zeros(size, 1)
        self.next_obs = torch.zeros(size, obs_dim)
        self.done = torch.zeros(size, 1)
        self.size = size
        self.ptr = 0
        self.full = False

    def add(self, obs, act, rew: float, next_obs, done: bool) -> None:
        self.obs[self.ptr] = obs
        self.act[self.ptr] = act
        self.rew[self.ptr] = rew
        self.next_obs[self.ptr] = next_obs
        self.done[self.ptr] = float(done)
        self.ptr = (self.ptr + 1) % self.size
        self.full = self.full or self.ptr == 0

    def sample(self, batch: int, generator: torch.Generator):
        high = self.size if self.full else self.ptr
        idx = torch.randint(0, high, (batch,), generator=generator)
        return self.obs[idx], self.act[idx], self.rew[idx], self.next_obs[idx], self.done[idx]
