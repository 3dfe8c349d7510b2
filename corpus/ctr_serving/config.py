"""Serving configuration for the click-through-rate scorer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ServingConfig:
    num_dense: int = 4
    num_sparse: int = 3
    bag_len: int = 5
    num_buckets: int = 97
    hash_mult: int = 2654435761
    hash_add: int = 40503
    embed_dim: int = 8
    hidden: int = 16
    dense_scale: tuple[float, ...] = field(default_factory=lambda: (0.5, 0.25, 1.0, 0.1))
    batch_buckets: tuple[int, ...] = (4, 8, 16)
    warmup_iters: int = 3
    b_traffic_pct: float = 0.0
    threshold: float = 0.5
    jitter: float = 1e-3
    jitter_seed: int = 17
    deterministic_jitter: bool = True
    memoize: bool = False
    release_cache: bool = False
    debug: bool = False
    seed: int = 0
