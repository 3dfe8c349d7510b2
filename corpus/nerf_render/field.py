from __future__ import annotations

import math

import torch
import torch.nn as nn


class NeRFField(nn.Module):
    """Positional-encoded MLP with a coarse-to-fine frequency window (BARF-style)."""

    def __init__(self, num_freqs: int, hidden: int):
        super().__init__()
        self.num_freqs = num_freqs
        self.register_buffer("freq_idx", torch.arange(num_freqs, dtype=torch.float32))
        self.alpha = 0.0
        in_dim = 3 + 3 * 2 * num_freqs
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 4))

    def advance_window(self, delta: float) -> None:
        self.alpha = min(self.alpha + delta, float(self.num_freqs))

    def encode(self, pts: torch.Tensor) -> torch.Tensor:
        scaled = pts[..., None] * (2.0 ** self.freq_idx) * math.pi
        window = 0.5 * (1 - torch.cos(math.pi * (self.alpha - self.freq_idx).clamp(0.0, 1.0)))  # expect: GS301
        enc = torch.cat([scaled.sin() * window, scaled.cos() * window], dim=-1)
        return torch.cat([pts, enc.flatten(-2)], dim=-1)

    def forward(self, pts: torch.Tensor) -> torch.Tensor:
        if pts.dim() != 3:
            raise ValueError("expected [rays, samples, 3]")
        return self.mlp(self.encode(pts))
