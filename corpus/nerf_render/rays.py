from __future__ import annotations

import torch
from torch.utils.data import Dataset


class SphereRays(Dataset):
    """Rays towards a soft coloured sphere; each item is (origin|direction, rgb)."""

    def __init__(self, num_rays: int, seed: int):
        gen = torch.Generator().manual_seed(seed)
        origins = torch.randn(num_rays, 3, generator=gen)
        origins = 2.5 * origins / origins.norm(dim=-1, keepdim=True)
        targets = 0.2 * torch.randn(num_rays, 3, generator=gen)
        dirs = targets - origins
        self.rays = torch.cat([origins, dirs / dirs.norm(dim=-1, keepdim=True)], dim=-1)
        self.rgb = torch.sigmoid(3.0 * self.rays[:, 3:]).clone()

    def __len__(self) -> int:
        return self.rays.shape[0]

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rays[i], self.rgb[i]
