"""Momentum queue of passage embeddings and a window of recent hard negatives."""

from __future__ import annotations

import torch


class EmbeddingQueue:
    def __init__(self, size: int, dim: int, recent: int, device: torch.device):
        self.size = size
        self.keys = torch.nn.functional.normalize(torch.randn(size, dim, device=device), dim=-1)
        self.recent = torch.zeros(recent, dim, device=device)
        self.seen_ids = torch.zeros(0, dtype=torch.long, device=device)
        self.ptr = 0

    def enqueue(self, keys: torch.Tensor, ids: torch.Tensor) -> None:
        n = keys.shape[0]
        self.keys[self.ptr:self.ptr + n] = keys.detach()  # expect: GS301
        self.ptr = (self.ptr + n) % self.size  # expect: GS302
        self.seen_ids = torch.cat([self.seen_ids, ids])  # expect: GS404

    def push_hard(self, hard: torch.Tensor) -> None:
        self.recent = torch.cat([self.recent[hard.shape[0]:], hard.detach()])  # expect: GS401

    def bank(self) -> torch.Tensor:
        return torch.cat([self.keys, self.recent])
