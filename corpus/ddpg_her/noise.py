"""Ornstein-Uhlenbeck exploration noise, kept on the host."""

from __future__ import annotations

import random

import torch


class OUNoise:
    def __init__(self, size: int, theta: float, sigma: float, seed: int):
        self.size = size
        self.theta = theta
        self.sigma = sigma
        self.rng = random.Random(seed)
        self.state = torch.zeros(size)

    def reset(self) -> None:
        self.state.zero_()

    def sample(self) -> torch.Tensor:
        dx = torch.tensor([self.rng.gauss(0.0, 1.0) for _ in range(self.size)])
        self.state = self.state + self.theta * (-self.state) + self.sigma * dx
        return self.state.clone()
