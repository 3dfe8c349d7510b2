"""Noisy dueling Q-network."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class NoisyLinear(nn.Module):
    def __init__(self, n_in: int, n_out: int, sigma0: float):
        super().__init__()
        bound = 1.0 / math.sqrt(n_in)
        self.weight_mu = nn.Parameter(torch.empty(n_out, n_in).uniform_(-bound, bound))
        self.weight_sigma = nn.Parameter(torch.full((n_out, n_in), sigma0 * bound))
        self.bias_mu = nn.Parameter(torch.empty(n_out).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((n_out,), sigma0 * bound))
        self.register_buffer("eps_in", torch.zeros(n_in))
        self.register_buffer("eps_out", torch.zeros(n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return F.linear(x, self.weight_mu, self.bias_mu)
        weight = self.weight_mu + self.weight_sigma * torch.outer(self.eps_out, self.eps_in)
        bias = self.bias_mu + self.bias_sigma * self.eps_out
        return F.linear(x, weight, bias)


def scale_noise(eps: torch.Tensor) -> torch.Tensor:
    return eps.sign() * eps.abs().sqrt()


class DuelingQNet(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int, sigma0: float):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU())
        self.value = nn.ModuleList([NoisyLinear(hidden, hidden, sigma0), NoisyLinear(hidden, 1, sigma0)])
        self.advantage = nn.ModuleList([NoisyLinear(hidden, hidden, sigma0), NoisyLinear(hidden, n_actions, sigma0)])

    def noisy_layers(self) -> list[NoisyLinear]:
        return [m for m in self.modules() if isinstance(m, NoisyLinear)]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        h = self.trunk(obs)
        v = self.value[1](F.relu(self.value[0](h)))
        a = self.advantage[1](F.relu(self.advantage[0](h)))
        return v + a - a.mean(dim=-1, keepdim=True)
