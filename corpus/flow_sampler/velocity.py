"""A tiny class-conditional velocity network for rectified-flow sampling of 2-D points: sinusoidal
time embedding, class embedding (with a learned null class for classifier-free guidance), an MLP."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class VelocityNet(nn.Module):
    def __init__(self, num_classes: int = 4, dim: int = 2, hidden: int = 64, t_dim: int = 16):
        super().__init__()
        self.t_dim = t_dim
        self.null_class = num_classes
        self.cls = nn.Embedding(num_classes + 1, hidden)
        self.t_mlp = nn.Sequential(nn.Linear(t_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.inp = nn.Linear(dim, hidden)
        self.body = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if t.ndim == 0:
            t = t.expand(x.shape[0])
        h = self.inp(x) + self.t_mlp(timestep_embedding(t, self.t_dim)) + self.cls(labels)
        return self.body(h)
