"""Synthetic clean speech and noise segments."""

from __future__ import annotations

import math

import torch
from torch.utils.data import Dataset


class SyntheticSpeech(Dataset):
    def __init__(self, n_items: int, seg_len: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        t = torch.arange(seg_len, dtype=torch.float32) / 8000.0
        f0 = 100.0 + 200.0 * torch.rand(n_items, 1, generator=g)
        envelope = (torch.sin(2 * math.pi * 3.0 * t) > 0).float()
        self.clean = 0.3 * torch.sin(2 * math.pi * f0 * t) * envelope
        self.noise = torch.randn(n_items, seg_len, generator=g)

    def __len__(self) -> int:
        return self.clean.shape[0]

    def __getitem__(self, i: int):
        return self.clean[i], self.noise[i]
