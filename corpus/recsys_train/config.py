"""Two-tower recommender settings."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FeatureConfig:
    names: tuple[str, ...] = ("category", "brand", "city")
    num_buckets: int = 97
    hash_mult: int = 1000003
    hash_add: int = 7919


@dataclass
class RecConfig:
    features: FeatureConfig = field(default_factory=FeatureConfig)
    num_users: int = 50
    num_items: int = 120
    dim: int = 16
    batch_size: int = 16
    num_negatives: int = 4
    history_len: int = 6
    neg_weight: float = 0.5
    warmup_batches: int = 4
    logit_temp: float = 1.0
    temp_decay: float = 0.9
    min_temp: float = 0.3
    dense_lr: float = 0.05
    sparse_lr: float = 0.05
    auc_bins: int = 32
    seed: int = 0
