"""Synthetic blob images with binary masks."""

from __future__ import annotations

import torch


def make_batch(batch_size: int, size: int, gen: torch.Generator):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    centers = torch.rand(batch_size, 2, generator=gen) * (size * 0.6) + size * 0.2
    radii = torch.rand(batch_size, generator=gen) * size * 0.15 + size * 0.1
    d = (xx[None] - centers[:, 0, None, None]) ** 2 + (yy[None] - centers[:, 1, None, None]) ** 2
    masks = (d < radii[:, None, None] ** 2).float()
    images = masks * 0.8 + torch.rand(batch_size, size, size, generator=gen) * 0.2
    return images, masks
