"""A toy random-walk task with an n-step transition builder."""

from __future__ import annotations

from collections import deque

import torch


class RandomWalk:
    def __init__(self, obs_dim: int, num_actions: int, seed: int, horizon: int = 12):
        self.gen = torch.Generator().manual_seed(seed)
        self.obs_dim = obs_dim
        self.num_actions = num_actions
        self.horizon = horizon
        self.state = torch.zeros(obs_dim)
        self.t = 0

    def reset(self) -> torch.Tensor:
        self.state = torch.randn(self.obs_dim, generator=self.gen) * 0.1
        self.t = 0
        return self.state.clone()

    def step(self, action: int) -> tuple[torch.Tensor, float, bool]:
        self.state[action % self.obs_dim] += 0.5
        self.state += torch.randn(self.obs_dim, generator=self.gen) * 0.05
        self.t += 1
        reward = float(self.state[0] - 0.5 * self.state[1:].abs().mean())
        return self.state.clone(), reward, self.t >= self.horizon


class NStepBuilder:
    def __init__(self, n: int):
        self.n = n
        self.window: deque = deque(maxlen=n)

    def push(self, obs, action: int, reward: float, next_obs, done: bool):
        self.window.append((obs, action, reward))
        if len(self.window) < self.n and not done:
            return None
        first_obs, first_action, _ = self.window[0]
        rewards = [r for _, _, r in self.window] + [0.0] * (self.n - len(self.window))
        if done:
            self.window.clear()
        return first_obs, first_action, rewards, next_obs, done
