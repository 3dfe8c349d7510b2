"""Preallocated key/value cache for one decoder layer."""

from __future__ import annotations

import torch


class StaticKVCache:
    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int, device: torch.device, dtype: torch.dtype = torch.float32):
        self.k = torch.zeros(batch, heads, max_len, head_dim, device=device, dtype=dtype)
        self.v = torch.zeros_like(self.k)
        self.max_len = max_len
        self.pos = 0

    def reset(self) -> None:
        self.k.zero_()
        self.v.zero_()
        self.pos = 0

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.k[:, :, self.pos] = k.squeeze(2)  # expect: GS301
        self.v[:, :, self.pos] = v.squeeze(2)  # expect: GS301
        self.pos += 1  # expect: GS302
        return self.k, self.v

    def valid_mask(self) -> torch.Tensor:
        idx = torch.arange(self.max_len, device=self.k.device)
        return idx < self.pos  # expect: GS301
