"""Synthetic image batches (fixed seed, CPU)."""

from __future__ import annotations

import torch

from config import TrainConfig


def synthetic_batches(cfg: TrainConfig, steps: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(cfg.model.num_classes, 3, cfg.model.image_size, cfg.model.image_size, generator=g)
    for _ in range(steps):
        labels = torch.randint(0, cfg.model.num_classes, (cfg.batch_size,), generator=g)
        noise = torch.randn(cfg.batch_size, 3, cfg.model.image_size, cfg.model.image_size, generator=g)
        yield protos[labels] + 0.5 * noise, labels
