"""Optimizer factory (Adam without weight decay, as in the top-k SAE recipe)."""

from __future__ import annotations

import torch
import torch.nn as nn


def build_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=6.25e-10)
