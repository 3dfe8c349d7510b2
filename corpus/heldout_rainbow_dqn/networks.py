"""Noisy dueling distributional (C51) Q-network."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class NoisyLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, sigma0: float = 0.5):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer("weight_eps", torch.zeros(out_features, in_features))
        self.register_buffer("bias_eps", torch.zeros(out_features))
        bound = 1.0 / math.sqrt(in_features)
        nn.init.uniform_(self.weight_mu, -bound, bound)
        nn.init.uniform_(self.bias_mu, -bound, bound)
        nn.init.constant_(self.weight_sigma, sigma0 * bound)
        nn.init.constant_(self.bias_sigma, sigma0 * bound)
        self.reset_noise()

    @staticmethod
    def _scaled_noise(n: int, device: torch.device) -> torch.Tensor:
        x = torch.randn(n, device=device)
        return x.sign() * x.abs().sqrt()

    def reset_noise(self) -> None:
        eps_in = self._scaled_noise(self.in_features, self.weight_mu.device)
        eps_out = self._scaled_noise(self.out_features, self.weight_mu.device)
        self.weight_eps.copy_(torch.outer(eps_out, eps_in))
        self.bias_eps.copy_(eps_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            w = self.weight_mu + self.weight_sigma * self.weight_eps
            b = self.bias_mu + self.bias_sigma * self.bias_eps
            return F.linear(x, w, b)
        return F.linear(x, self.weight_mu, self.bias_mu)


class RainbowNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.atoms = cfg.atoms
        self.num_actions = cfg.num_actions
        self.trunk = nn.Sequential(nn.Linear(cfg.obs_dim, cfg.hidden), nn.ReLU())
        self.value = NoisyLinear(cfg.hidden, cfg.atoms)
        self.advantage = NoisyLinear(cfg.hidden, cfg.num_actions * cfg.atoms)

    def forward(self, obs: torch.Tensor, log: bool = False) -> torch.Tensor:
        if torch.isnan(obs).any():  # expect: GS201
            obs = torch.nan_to_num(obs)
        h = self.trunk(obs)
        v = self.value(h).view(-1, 1, self.atoms)
        a = self.advantage(h).view(-1, self.num_actions, self.atoms)
        logits = v + a - a.mean(1, keepdim=True)
        return logits.log_softmax(-1) if log else logits.softmax(-1)

    def q_values(self, obs: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
        return (self.forward(obs) * support).sum(-1)

    def reset_noise(self) -> None:
        for m in self.modules():
            if isinstance(m, NoisyLinear):
                m.reset_noise()
