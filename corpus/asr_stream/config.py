from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ASRConfig:
    feat_dim: int = 16
    d_model: int = 32
    n_heads: int = 4
    vocab_size: int = 12
    blank_id: int = 0
    chunk_frames: int = 8
    max_positions: int = 256
    max_symbols_per_frame: int = 3
    batch_size: int = 2
    profile: bool = False
    debug: bool = False
    host_copy: bool = False
