"""A synthetic multi-sensor stream with a mean shift half-way and a few injected spikes."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset


class SensorStream(Dataset):
    def __init__(self, n_steps: int, n_sensors: int, seed: int, shift_at: int | None = None):
        gen = torch.Generator().manual_seed(seed)
        t = torch.arange(n_steps, dtype=torch.float32)[:, None]
        phase = torch.rand(1, n_sensors, generator=gen) * 6.28
        base = torch.sin(0.1 * t + phase) + 0.1 * torch.randn(n_steps, n_sensors, generator=gen)
        if shift_at is None:
            shift_at = n_steps // 2
        base[shift_at:] += 1.5
        spikes = torch.rand(n_steps, n_sensors, generator=gen) < 0.02
        self.data = torch.where(spikes, base + 4.0, base)

    def __len__(self) -> int:
        return self.data.shape[0]

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.data[i]
