"""Convolutional encoder and decoder of the VQGAN first stage."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import ModelConfig


class ResBlock(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(4, ch)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.norm2 = nn.GroupNorm(4, ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


class Encoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.conv_in = nn.Conv2d(cfg.in_channels, cfg.ch, 3, padding=1)
        self.blocks = nn.ModuleList([ResBlock(cfg.ch), ResBlock(cfg.ch)])
        self.down = nn.Conv2d(cfg.ch, cfg.ch, 4, stride=2, padding=1)
        self.conv_out = nn.Conv2d(cfg.ch, cfg.z_channels, 1)
        self.grad_checkpointing = cfg.grad_checkpointing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv_in(x)
        for block in self.blocks:
            if self.grad_checkpointing and self.training:
                h = checkpoint(block, h, use_reentrant=False)  # expect: GS603
            else:
                h = block(h)
        return self.conv_out(F.silu(self.down(h)))


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.conv_in = nn.Conv2d(cfg.z_channels, cfg.ch, 3, padding=1)
        self.block = ResBlock(cfg.ch)
        self.up = nn.ConvTranspose2d(cfg.ch, cfg.ch, 4, stride=2, padding=1)
        self.last_layer = nn.Conv2d(cfg.ch, cfg.in_channels, 3, padding=1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.block(self.conv_in(z))
        h = F.silu(self.up(h))
        return torch.tanh(self.last_layer(h))
