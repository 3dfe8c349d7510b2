"""Observation encoder and the noise-prediction network (a conditional residual MLP)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        scale = math.log(10000) / (half - 1)
        freqs = torch.exp(torch.arange(half, device=t.device) * -scale)
        args = t.float()[:, None] * freqs[None, :]
        return torch.cat([args.sin(), args.cos()], dim=-1)


class ObsEncoder(nn.Module):
    def __init__(self, obs_dim: int, n_obs_steps: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim * n_obs_steps, hidden), nn.Mish(), nn.Linear(hidden, hidden))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dim() == 2:
            obs = obs.unsqueeze(0)
        return self.net(obs.flatten(1))


class FiLMBlock(nn.Module):
    def __init__(self, hidden: int, cond_dim: int):
        super().__init__()
        self.lin = nn.Linear(hidden, hidden)
        self.film = nn.Linear(cond_dim, 2 * hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, h: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.film(cond).unsqueeze(1).chunk(2, dim=-1)
        return h + F.mish(self.norm(self.lin(h)) * (1 + gamma) + beta)


class NoisePredictor(nn.Module):
    def __init__(self, action_dim: int, hidden: int, cond_dim: int, n_blocks: int, grad_checkpoint: bool):
        super().__init__()
        self.time_emb = nn.Sequential(SinusoidalPosEmb(hidden), nn.Linear(hidden, hidden), nn.Mish())
        self.inp = nn.Linear(action_dim, hidden)
        self.blocks = nn.ModuleList(FiLMBlock(hidden, cond_dim + hidden) for _ in range(n_blocks))
        self.out = nn.Linear(hidden, action_dim)
        self.grad_checkpoint = grad_checkpoint

    def forward(self, sample: torch.Tensor, timesteps: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        assert cond.abs().max() < 1e4, "observation features exploded"  # expect: GS201
        c = torch.cat([cond, self.time_emb(timesteps)], dim=-1)
        h = self.inp(sample)
        for block in self.blocks:
            if self.grad_checkpoint and self.training:
                h = checkpoint(block, h, c, use_reentrant=False)  # expect: GS603
            else:
                h = block(h, c)
        return self.out(h)
