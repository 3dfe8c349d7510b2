"""Medusa heads: one residual block + vocabulary projection per look-ahead position."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class ResBlock(nn.Module):
    def __init__(self, d_model: int):
        super().__init__()
        self.linear = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.silu(self.linear(x))


class MedusaHeads(nn.Module):
    def __init__(self, d_model: int, vocab_size: int, n_heads: int):
        super().__init__()
        self.blocks = nn.ModuleList([ResBlock(d_model) for _ in range(n_heads)])
        self.out = nn.ModuleList([nn.Linear(d_model, vocab_size, bias=False) for _ in range(n_heads)])

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.stack([out(block(hidden)) for block, out in zip(self.blocks, self.out)])
