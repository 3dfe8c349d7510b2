"""PatchGAN discriminator."""

from __future__ import annotations

import torch
import torch.nn as nn


class NLayerDiscriminator(nn.Module):
    def __init__(self, in_channels: int = 3, ndf: int = 16, n_layers: int = 2):
        super().__init__()
        layers = [nn.Conv2d(in_channels, ndf, 4, stride=2, padding=1), nn.LeakyReLU(0.2)]
        mult = 1
        for n in range(1, n_layers):
            prev, mult = mult, min(2 ** n, 8)
            layers += [nn.Conv2d(ndf * prev, ndf * mult, 4, stride=2, padding=1),
                       nn.BatchNorm2d(ndf * mult), nn.LeakyReLU(0.2)]
        layers += [nn.Conv2d(ndf * mult, 1, 3, padding=1)]
        self.main = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x)
