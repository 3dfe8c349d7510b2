"""WaveNet with an incremental one-sample interface."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import WaveNetConfig
from layers import ResidualLayer


class WaveNet(nn.Module):
    def __init__(self, cfg: WaveNetConfig):
        super().__init__()
        self.cfg = cfg
        self.embed_in = nn.Linear(cfg.quantization_channels, cfg.residual_channels)
        self.layers = nn.ModuleList(
            [ResidualLayer(cfg.residual_channels, cfg.skip_channels, cfg.cond_channels, d) for d in cfg.dilations]
        )
        self.out1 = nn.Linear(cfg.skip_channels, cfg.skip_channels)
        self.out2 = nn.Linear(cfg.skip_channels, cfg.quantization_channels)

    def embed(self, prev: torch.Tensor) -> torch.Tensor:
        return self.embed_in(F.one_hot(prev, num_classes=self.cfg.quantization_channels).float())

    def head(self, skips: torch.Tensor) -> torch.Tensor:
        return self.out2(F.relu(self.out1(F.relu(skips))))
