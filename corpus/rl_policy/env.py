"""A vectorised toy environment in plain Python: walk along a corridor to reach the goal cell."""

from __future__ import annotations

import random


class CorridorEnv:
    def __init__(self, n_envs: int, length: int = 7, max_steps: int = 20, seed: int = 0):
        self.n_envs = n_envs
        self.length = length
        self.max_steps = max_steps
        self.rng = random.Random(seed)
        self.pos = [0] * n_envs
        self.t = [0] * n_envs

    def _obs(self, i: int) -> list[float]:
        one_hot = [0.0] * self.length
        one_hot[self.pos[i]] = 1.0
        return one_hot + [self.t[i] / self.max_steps]

    def reset(self) -> list[list[float]]:
        for i in range(self.n_envs):
            self.pos[i] = self.rng.randrange(self.length - 1)
            self.t[i] = 0
        return [self._obs(i) for i in range(self.n_envs)]

    def step(self, actions: list[int]):
        obs, rewards, dones = [], [], []
        for i, a in enumerate(actions):
            self.pos[i] = max(0, min(self.length - 1, self.pos[i] + (1 if a == 1 else -1)))
            self.t[i] += 1
            done = self.pos[i] == self.length - 1 or self.t[i] >= self.max_steps
            rewards.append(1.0 if self.pos[i] == self.length - 1 else -0.01)
            dones.append(done)
            if done:
                self.pos[i] = self.rng.randrange(self.length - 1)
                self.t[i] = 0
            obs.append(self._obs(i))
        return obs, rewards, dones
