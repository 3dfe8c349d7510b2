from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TowerConfig:
    num_users: int = 64
    num_items: int = 128
    embed_dim: int = 16
    hidden: tuple[int, ...] = (32, 16)
    history_len: int = 6


@dataclass
class RetrievalConfig:
    seed: int = 0
    batch_size: int = 16
    towers: TowerConfig = field(default_factory=TowerConfig)
    init_temperature: float = 0.07
    min_temperature: float = 0.01
    max_temperature: float = 1.0
    dense_lr: float = 0.05
    sparse_lr: float = 0.05
    freq_decay: float = 0.05
    hard_negatives: int = 4
    hard_neg_ramp: int = 4
    hard_neg_prob: float = 0.5
    margin: float = 0.2
    recall_k: int = 10
    use_logq: bool = True
