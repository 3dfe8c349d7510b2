from __future__ import annotations

import math

import torch


def synthetic_audio(num: int, batch: int, samples: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(samples) / 16000.0
    out = []
    for _ in range(num):
        freqs = 100 + 400 * torch.rand(batch, 1, generator=g)
        wav = torch.sin(2 * math.pi * freqs * t) + 0.1 * torch.randn(batch, samples, generator=g)
        out.append((wav - wav.mean(-1, keepdim=True)) / (wav.std(-1, keepdim=True) + 1e-5))
    return out
