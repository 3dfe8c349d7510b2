"""A preallocated key/value cache for a batch of one sequence."""

from __future__ import annotations

import torch


class KVCache:
    def __init__(self, n_layers: int, n_heads: int, head_dim: int, max_len: int, device: torch.device):
        self.k = torch.zeros(n_layers, n_heads, max_len, head_dim, device=device)
        self.v = torch.zeros_like(self.k)
        self.max_len = max_len
        self.pos = 0

    def positions(self, n: int, device: torch.device) -> torch.Tensor:
        return torch.arange(n, device=device) + self.pos  # expect: GS301

    def prefix(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.k[layer, :, : self.pos], self.v[layer, :, : self.pos]  # expect: GS301

    def store(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        end = self.pos + k.shape[1]
        self.k[layer, :, self.pos : end] = k  # expect: GS301
        self.v[layer, :, self.pos : end] = v  # expect: GS301

    def advance(self, n: int) -> None:
        self.pos += n  # expect: GS302

    def reset(self) -> None:
        self.pos = 0
        self.k.zero_()
        self.v.zero_()
