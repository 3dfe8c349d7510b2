"""A tiny conditional denoiser for 2-D point clouds: sinusoidal timestep embedding + residual MLP."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, dim: int, emb_dim: int):
        super().__init__()
        self.norm = nn.GroupNorm(4, dim)
        self.fc1 = nn.Linear(dim, dim)
        self.emb = nn.Linear(emb_dim, 2 * dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, h: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        scale, shift = self.emb(F.silu(emb)).chunk(2, dim=-1)
        x = self.norm(h) * (1 + scale) + shift
        return h + self.fc2(F.silu(self.fc1(x)))


class Denoiser(nn.Module):
    def __init__(self, data_dim: int = 2, dim: int = 32, n_classes: int = 4, n_blocks: int = 2):
        super().__init__()
        self.dim = dim
        self.inp = nn.Linear(data_dim, dim)
        self.time = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.label = nn.Embedding(n_classes + 1, dim)  # last index = unconditional
        self.blocks = nn.ModuleList(ResBlock(dim, dim) for _ in range(n_blocks))
        self.out = nn.Linear(dim, data_dim)
        self.null_class = n_classes

    def forward(self, x: torch.Tensor, t: int, labels: torch.Tensor) -> torch.Tensor:
        t_batch = torch.tensor([t] * x.shape[0], device=x.device)  # expect: GS301, GS402
        emb = self.time(timestep_embedding(t_batch, self.dim)) + self.label(labels)
        h = self.inp(x)
        for block in self.blocks:
            h = block(h, emb)
        return self.out(h)
