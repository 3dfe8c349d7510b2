"""A small dense autoencoder over per-sensor features."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint_sequential

from config import AEConfig


class Encoder(nn.Module):
    def __init__(self, n_in: int, hidden: int, latent: int):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, latent)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class SensorAutoencoder(nn.Module):
    def __init__(self, cfg: AEConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg.n_sensors, cfg.hidden, cfg.latent)
        self.decoder = nn.Sequential(
            nn.Linear(cfg.latent, cfg.hidden),
            nn.GELU(),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.GELU(),
            nn.Linear(cfg.hidden, cfg.n_sensors),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.encoder(x)
        if self.cfg.checkpoint_decoder and self.training:
            return checkpoint_sequential(self.decoder, 2, z, use_reentrant=False)  # expect: GS603
        return self.decoder(z)
