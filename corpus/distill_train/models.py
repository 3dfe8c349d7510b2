"""Teacher and student networks."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim: int, p: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(), nn.Dropout(p))

    def forward(self, x):
        return x + self.net(x)


class Teacher(nn.Module):
    def __init__(self, in_dim: int, width: int, n_classes: int):
        super().__init__()
        self.stem = nn.Linear(in_dim, width)
        self.blocks = nn.ModuleList([Block(width, 0.0) for _ in range(3)])
        self.head = nn.Linear(width, n_classes)

    def forward(self, x):
        h = self.stem(x)
        feats = h
        for i, block in enumerate(self.blocks):
            h = checkpoint(block, h, use_reentrant=False, preserve_rng_state=False)
            if i == 1:
                feats = h
        return self.head(h), feats


class Student(nn.Module):
    def __init__(self, in_dim: int, width: int, n_classes: int, grad_ckpt: bool = True):
        super().__init__()
        self.stem = nn.Linear(in_dim, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(2)])
        self.head = nn.Linear(width, n_classes)
        self.grad_ckpt = grad_ckpt

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for block in self.blocks:
            if self.grad_ckpt and self.training:
                h = checkpoint(block, h, use_reentrant=False, preserve_rng_state=True)  # expect: GS603
            else:
                h = block(h)
        return self.head(h)
