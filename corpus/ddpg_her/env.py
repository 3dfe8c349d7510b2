"""A point that must reach a goal on the plane; sparse rewards."""

from __future__ import annotations

import torch


class PointGoal:
    def __init__(self, cfg, seed: int):
        self.cfg = cfg
        self.gen = torch.Generator().manual_seed(seed)
        self.pos = torch.zeros(2)
        self.vel = torch.zeros(2)
        self.goal = torch.zeros(2)

    def reset(self) -> dict[str, torch.Tensor]:
        self.pos = torch.rand(2, generator=self.gen) * 2 - 1
        self.vel = torch.zeros(2)
        self.goal = torch.rand(2, generator=self.gen) * 2 - 1
        return self._obs()

    def _obs(self) -> dict[str, torch.Tensor]:
        return {"observation": torch.cat([self.pos, self.vel]), "achieved_goal": self.pos.clone(), "desired_goal": self.goal.clone()}

    def step(self, action: torch.Tensor) -> dict[str, torch.Tensor]:
        self.vel = 0.5 * self.vel + 0.1 * action
        self.pos = (self.pos + self.vel).clamp(-1.5, 1.5)
        return self._obs()
