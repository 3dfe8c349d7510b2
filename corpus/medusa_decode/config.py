"""Settings of the base model, the Medusa heads and the acceptance rule."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MedusaConfig:
    vocab_size: int = 32
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    max_len: int = 96
    medusa_heads: int = 3
    topk: int = 3
    tree_choices: tuple[tuple[int, ...], ...] = (
        (0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 0, 0), (0, 0, 2), (0, 2, 0), (2, 0, 0), (1, 1, 0),
    )
    temperature: float = 0.7
    posterior_threshold: float = 0.09
    posterior_alpha: float = 0.9
    stop_ids: tuple[int, ...] = (1, 2)
    max_new_tokens: int = 20
    deterministic: bool = False
    sample_seed: int = 1234
    trace_path: str | None = None
    stream: bool = False
