from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from config import MoCoConfig


class GPUAugment:
    """Batched augmentations that run on the device next to the model."""

    def __init__(self, cfg: MoCoConfig, device: torch.device):
        self.cfg = cfg
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(cfg.seed)

    def random_crop(self, x: torch.Tensor) -> torch.Tensor:
        pad = self.cfg.crop_pad
        padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
        h, w = x.shape[-2:]
        i = torch.randint(0, 2 * pad + 1, (1,), device=x.device).item()  # expect: GS101
        j = torch.randint(0, 2 * pad + 1, (1,), device=x.device)
        return padded[..., i:i + h, j:j + w]  # expect: GS105, GS301

    def color_jitter(self, x: torch.Tensor) -> torch.Tensor:
        s = self.cfg.jitter
        brightness = torch.empty(x.shape[0], 1, 1, 1, device=x.device).uniform_(1 - s, 1 + s, generator=self.gen)  # expect: GS601
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        return ((x - mean) * brightness + mean).clamp(-3.0, 3.0)

    def flip(self, x: torch.Tensor) -> torch.Tensor:
        if random.random() < self.cfg.flip_prob:  # expect: GS502
            x = x.flip(-1)
        return x

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.color_jitter(self.flip(self.random_crop(x)))
