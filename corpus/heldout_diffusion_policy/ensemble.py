"""Temporal ensembling of overlapping action chunks (ACT-style exponential weights)."""

from __future__ import annotations

import math

import torch


class TemporalEnsembler:
    def __init__(self, chunk_len: int, k: float):
        self.chunk_len = chunk_len
        self.k = k
        self.chunks: list[tuple[int, torch.Tensor]] = []
        self.t = 0

    def add(self, chunk: torch.Tensor) -> None:
        self.chunks.append((self.t, chunk.detach().cpu()))
        self.chunks = [(s, c) for s, c in self.chunks if self.t - s < self.chunk_len]

    def act(self) -> list[float]:
        preds, weights = [], []
        for start, chunk in self.chunks:
            preds.append(chunk[self.t - start])
            weights.append(math.exp(-self.k * (self.t - start)))
        w = torch.tensor(weights) / sum(weights)
        self.t += 1
        return (torch.stack(preds) * w[:, None]).sum(0).tolist()
