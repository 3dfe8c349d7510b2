"""A small residual MLP classifier, the way a research codebase would write one."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    in_dim: int = 24
    dim: int = 32
    hidden: int = 64
    n_blocks: int = 3
    n_classes: int = 5
    dropout: float = 0.0
    label_smoothing: float = 0.05
    check_finite: bool = True  # debug flag people leave on
    track_activations: bool = True


class ResidualBlock(nn.Module):
    def __init__(self, config: ModelConfig, index: int):
        super().__init__()
        self.config = config
        self.index = index
        self.norm = nn.LayerNorm(config.dim)
        self.fc1 = nn.Linear(config.dim, config.hidden)
        self.fc2 = nn.Linear(config.hidden, config.dim)
        self.drop = nn.Dropout(config.dropout)
        self.act_history: list[torch.Tensor] = []
        self.dead_fraction = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.fc1(self.norm(x)))
        if self.config.track_activations and self.training:
            # fraction of units that never fire in this batch, for a dashboard
            self.dead_fraction = (h <= 0).all(dim=0).float().mean().item()  # expect: GS101
            self.act_history.append(h.detach().abs().mean())  # expect: GS503
        h = self.fc2(self.drop(h))
        if self.config.check_finite:
            assert torch.isfinite(h).all(), f"non-finite activations in block {self.index}"  # expect: GS201
        return x + h / math.sqrt(self.config.n_blocks)


class MLPClassifier(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Linear(config.in_dim, config.dim)
        self.blocks = nn.ModuleList(ResidualBlock(config, i) for i in range(config.n_blocks))
        self.norm = nn.LayerNorm(config.dim)
        self.head = nn.Linear(config.dim, config.n_classes)

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None):
        if x.dim() == 1:
            x = x.unsqueeze(0)
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        logits = self.head(self.norm(h))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits, targets, label_smoothing=self.config.label_smoothing)
        return logits, loss

    def param_norm(self) -> float:
        return math.sqrt(sum(float(p.detach().pow(2).sum()) for p in self.parameters()))
