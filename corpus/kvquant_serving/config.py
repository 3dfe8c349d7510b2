"""Serving configuration and per-request sampling parameters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ServingConfig:
    vocab_size: int = 64
    d_model: int = 32
    n_heads: int = 2
    block_size: int = 4
    num_blocks: int = 48
    max_batch: int = 4
    max_blocks_per_seq: int = 6
    max_queue: int = 16
    eos_id: int = 0
    profile: bool = False
    use_fp16: bool = True
    seed: int = 0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def max_context(self) -> int:
        return self.block_size * self.max_blocks_per_seq


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 8
    seed: int | None = None
