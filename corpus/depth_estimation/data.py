"""Synthetic video clips: a target frame and its temporal neighbours."""

from __future__ import annotations

import torch

from config import DepthConfig


class ClipSampler:
    def __init__(self, cfg: DepthConfig, num_frames: int = 12, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.cfg = cfg
        base = torch.rand(1, 3, cfg.height, cfg.width * 2, generator=g)
        self.frames = [base[..., i : i + cfg.width].clone() for i in range(num_frames)]
        self.gen = torch.Generator().manual_seed(seed + 7)

    def sample(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        lo = max(-min(self.cfg.frame_ids), 0)
        hi = len(self.frames) - max(self.cfg.frame_ids)
        centres = torch.randint(lo, hi, (self.cfg.batch_size,), generator=self.gen).tolist()
        target = torch.cat([self.frames[c] for c in centres])
        sources = [torch.cat([self.frames[c + k] for c in centres]) for k in self.cfg.frame_ids]
        return target, sources

    def ground_truth(self) -> torch.Tensor:
        return torch.linspace(1.0, 5.0, self.cfg.width).expand(self.cfg.batch_size, 1, self.cfg.height, -1).clone()


class PlateauScale:
    def __init__(self, factor: float = 0.5, patience: int = 1, min_scale: float = 0.05):
        self.factor = factor
        self.patience = patience
        self.min_scale = min_scale
        self.best = float("inf")
        self.bad = 0
        self.scale = 1.0

    def update(self, value: float) -> float:
        if value < self.best - 1e-6:
            self.best = value
            self.bad = 0
        else:
            self.bad += 1
            if self.bad > self.patience:
                self.scale = max(self.min_scale, self.scale * self.factor)
                self.bad = 0
        return self.scale
