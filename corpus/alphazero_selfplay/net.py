"""Residual policy/value network."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from config import AlphaZeroConfig


class ResBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


class PolicyValueNet(nn.Module):
    def __init__(self, cfg: AlphaZeroConfig):
        super().__init__()
        n, c = cfg.board, cfg.channels
        self.stem = nn.Conv2d(2, c, 3, padding=1)
        self.trunk = nn.ModuleList(ResBlock(c) for _ in range(cfg.blocks))
        self.policy_head = nn.Sequential(nn.Conv2d(c, 2, 1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * n * n, n * n))
        self.value_head = nn.Sequential(
            nn.Conv2d(c, 1, 1), nn.ReLU(), nn.Flatten(), nn.Linear(n * n, 32), nn.ReLU(), nn.Linear(32, 1)
        )
        self.grad_ckpt = cfg.grad_ckpt

    def forward(self, x: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() == 3:
            x, legal = x.unsqueeze(0), legal.unsqueeze(0)
        if not legal.any(-1).all():  # expect: GS201
            raise ValueError("position without a legal move")
        h = torch.relu(self.stem(x))
        for block in self.trunk:
            h = checkpoint(block, h, use_reentrant=False) if self.grad_ckpt else block(h)  # expect: GS603
        logits = self.policy_head(h).masked_fill(~legal, -1e9)
        assert torch.isfinite(logits).all(), "policy logits overflow"  # expect: GS201
        value = torch.tanh(self.value_head(h)).squeeze(-1)
        return logits, value
