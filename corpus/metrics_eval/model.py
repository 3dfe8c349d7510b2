"""A small 1-D conv classifier over multichannel sensor windows."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class SensorNet(nn.Module):
    def __init__(self, channels: int = 6, width: int = 32, n_classes: int = 5, saturation: float = 6.0):
        super().__init__()
        self.saturation = saturation
        self.conv1 = nn.Conv1d(channels, width, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(width, width, kernel_size=3, padding=1)
        self.norm = nn.BatchNorm1d(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:  # a single unbatched window
            x = x.unsqueeze(0)
        x = x.clone()
        x[x.abs() > self.saturation] = 0.0  # saturated readings are dropped
        h = F.relu(self.norm(self.conv1(x)))
        h = F.relu(self.conv2(h)) + h
        return self.head(h.mean(dim=-1))
