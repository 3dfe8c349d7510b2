"""Synthetic moving-blob clips with random captions."""

from __future__ import annotations

import torch


class MovingBlobs:
    def __init__(self, cfg, seed: int):
        self.cfg = cfg
        self.gen = torch.Generator().manual_seed(seed)

    def batch(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        cfg = self.cfg
        base = torch.randn(cfg.batch_size, 1, cfg.channels, cfg.size, cfg.size, generator=self.gen)
        drift = torch.linspace(0.0, 1.0, cfg.frames).view(1, cfg.frames, 1, 1, 1)
        clips = (base + drift * 0.5).tanh()
        captions = [
            torch.randint(1, cfg.vocab, (cfg.caption_len,), generator=self.gen) for _ in range(cfg.batch_size)
        ]
        return clips, captions
