"""A tiny MoE regressor over padded, variable-length float feature frames (e.g. audio features)."""

from __future__ import annotations

import torch
import torch.nn as nn

from moe import SparseMoE


class MoEBlock(nn.Module):
    def __init__(self, dim: int, hidden: int, n_experts: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.mix = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.moe = SparseMoE(dim, hidden, n_experts)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        x = x + self.mix(self.norm1(x))
        y, aux = self.moe(self.norm2(x), mask)
        return x + y, aux


class MoEModel(nn.Module):
    def __init__(self, in_dim: int = 12, dim: int = 24, hidden: int = 32, n_layers: int = 2, n_experts: int = 4):
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.blocks = nn.ModuleList(MoEBlock(dim, hidden, n_experts) for _ in range(n_layers))
        self.out = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        """x: (batch, frames, in_dim) features; mask: (batch, frames), True on real (non-padding) frames."""
        h = self.inp(x)
        aux_total = h.new_zeros(())
        for block in self.blocks:
            h, aux = block(h, mask)
            aux_total = aux_total + aux
        return self.out(h).squeeze(-1), aux_total
