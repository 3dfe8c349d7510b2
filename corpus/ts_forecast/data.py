"""Synthetic seasonal series, variable-lookback window sampling and left padding."""

from __future__ import annotations

import math

import torch
from torch.nn.utils.rnn import pad_sequence

from config import ForecastConfig


class WindowSampler:
    def __init__(self, cfg: ForecastConfig, n_series: int, length: int, seed: int):
        self.cfg = cfg
        self.gen = torch.Generator().manual_seed(seed)
        t = torch.arange(length, dtype=torch.float32)
        period = torch.randint(3, 9, (n_series, 1), generator=self.gen).float()
        phase = torch.rand(n_series, 1, generator=self.gen) * 2 * math.pi
        level = torch.randn(n_series, 1, generator=self.gen) * 5
        trend = torch.randn(n_series, 1, generator=self.gen) * 0.05
        noise = 0.1 * torch.randn(n_series, length, generator=self.gen)
        self.series = level + trend * t + torch.sin(2 * math.pi * t / period + phase) + noise

    def sample(self, batch: int) -> tuple[list[torch.Tensor], torch.Tensor]:
        cfg = self.cfg
        rows = torch.randint(0, self.series.shape[0], (batch,), generator=self.gen).tolist()
        lookbacks = torch.randint(cfg.min_lookback, cfg.max_lookback + 1, (batch,), generator=self.gen).tolist()
        last_start = self.series.shape[1] - cfg.max_lookback - cfg.horizon
        starts = torch.randint(0, last_start + 1, (batch,), generator=self.gen).tolist()
        windows, targets = [], []
        for row, lb, s in zip(rows, lookbacks, starts):
            end = s + cfg.max_lookback
            windows.append(self.series[row, end - lb : end].clone())
            targets.append(self.series[row, end : end + cfg.horizon])
        return windows, torch.stack(targets)


def left_pad(windows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad variable-length windows; returns (ctx, pad_mask) with True where padded."""
    ctx = pad_sequence([w.flip(0) for w in windows], batch_first=True).flip(1)  # expect: GS408
    lengths = [w.shape[0] for w in windows]
    positions = torch.arange(max(lengths), device=ctx.device)  # expect: GS408
    pad_mask = positions.flip(0)[None, :] >= torch.tensor(lengths, device=ctx.device)[:, None]  # expect: GS402
    return ctx, pad_mask
