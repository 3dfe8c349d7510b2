"""Model and generation settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class MambaConfig:
    vocab_size: int = 48
    d_model: int = 32
    n_layers: int = 2
    d_state: int = 8
    d_conv: int = 4
    expand: int = 2
    dt_rank: int = 4
    eps: float = 1e-5


@dataclass
class GenerationConfig:
    max_new_tokens: int = 12
    temperature: float = 0.8
    top_k: int = 20
    top_p: float = 0.9
    repetition_penalty: float = 1.2
    stop_strings: list = field(default_factory=lambda: ["\n\n"])
    stop_token_ids: list = field(default_factory=lambda: [1])
    seed: Optional[int] = None
    batch_size: int = 2
    max_cache_tokens: int = 64
