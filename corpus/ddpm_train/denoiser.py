from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import DiffusionConfig


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)

    def forward(self, h: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(F.silu(self.fc1(self.norm(h) + emb)))


class Denoiser(nn.Module):
    def __init__(self, cfg: DiffusionConfig):
        super().__init__()
        self.cfg = cfg
        self.null_class = cfg.num_classes
        self.inp = nn.Linear(cfg.data_dim, cfg.hidden)
        self.class_emb = nn.Embedding(cfg.num_classes + 1, cfg.hidden)
        self.time_mlp = nn.Sequential(nn.Linear(cfg.hidden, cfg.hidden), nn.SiLU(), nn.Linear(cfg.hidden, cfg.hidden))
        self.blocks = nn.ModuleList(ResBlock(cfg.hidden) for _ in range(3))
        self.out = nn.Linear(cfg.hidden, cfg.data_dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if labels is None:
            labels = torch.full_like(t, self.null_class)
        emb = self.time_mlp(timestep_embedding(t, self.cfg.hidden)) + self.class_emb(labels)
        h = self.inp(x)
        for block in self.blocks:
            if self.cfg.grad_checkpoint and self.training:
                h = checkpoint(block, h, emb, use_reentrant=False)  # expect: GS603
            else:
                h = block(h, emb)
        return self.out(h)
