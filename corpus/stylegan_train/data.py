"""A toy image distribution: smooth colour blobs on an 8x8 grid."""

from __future__ import annotations

import torch


class BlobImages:
    def __init__(self, res: int, channels: int, seed: int):
        self.res = res
        self.channels = channels
        self.gen = torch.Generator().manual_seed(seed)
        coords = torch.linspace(-1.0, 1.0, res)
        self.yy, self.xx = torch.meshgrid(coords, coords, indexing="ij")

    def batch(self, n: int) -> torch.Tensor:
        centre = torch.rand(n, 2, generator=self.gen) * 1.2 - 0.6
        colour = torch.rand(n, self.channels, generator=self.gen) * 2 - 1
        d2 = (self.xx[None] - centre[:, 0, None, None]) ** 2 + (self.yy[None] - centre[:, 1, None, None]) ** 2
        blob = torch.exp(-d2 / 0.2)
        return blob[:, None] * colour[:, :, None, None]
