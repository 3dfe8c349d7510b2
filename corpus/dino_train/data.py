"""Multi-crop augmentation on synthetic images (host side, before the step)."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F


class MultiCropAugment:
    def __init__(self, global_size: int, local_size: int, local_crops_number: int, seed: int):
        self.global_size = global_size
        self.local_size = local_size
        self.local_crops_number = local_crops_number
        self.rng = random.Random(seed)

    def _crop(self, img: torch.Tensor, scale: tuple[float, float], size: int) -> torch.Tensor:
        _, h, w = img.shape
        s = self.rng.uniform(*scale)
        ch, cw = max(2, int(h * s)), max(2, int(w * s))
        top = self.rng.randint(0, h - ch)
        left = self.rng.randint(0, w - cw)
        crop = img[:, top:top + ch, left:left + cw].unsqueeze(0)
        crop = F.interpolate(crop, size=(size, size), mode="bilinear", align_corners=False)[0]
        if self.rng.random() < 0.5:
            crop = crop.flip(-1)
        return crop

    def __call__(self, images: torch.Tensor) -> list[torch.Tensor]:
        crops = []
        for _ in range(2):
            crops.append(torch.stack([self._crop(im, (0.4, 1.0), self.global_size) for im in images]))
        for _ in range(self.local_crops_number):
            crops.append(torch.stack([self._crop(im, (0.05, 0.4), self.local_size) for im in images]))
        return crops


def synthetic_images(n: int, size: int, generator: torch.Generator) -> torch.Tensor:
    base = torch.rand(n, 3, 1, 1, generator=generator)
    noise = torch.rand(n, 3, size, size, generator=generator)
    return (0.7 * base + 0.3 * noise).clamp(0, 1)
