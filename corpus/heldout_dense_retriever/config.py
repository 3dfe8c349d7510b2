"""Configuration of the dual-encoder retriever."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RetrieverConfig:
    vocab_size: int = 200
    dim: int = 32
    n_layers: int = 2
    seq_len: int = 12
    batch_size: int = 8
    n_hard: int = 1
    queue_size: int = 32
    recent_size: int = 16
    momentum: float = 0.99
    init_temperature: float = 0.07
    max_logit_scale: float = 100.0
    lr: float = 2e-3
    temp_lr: float = 1e-2
    hard_k: int = 4
    hard_weight: float = 0.5
    margins: tuple = (0.1, 0.2)
    recall_ks: tuple = (1, 5)
    snapshot_queue: bool = False
    snapshot_path: str = "queue.pt"
    n_passages: int = 64
    seed: int = 0
    extra: dict = field(default_factory=dict)
