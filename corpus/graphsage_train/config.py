from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SAGEConfig:
    seed: int = 0
    n_nodes: int = 120
    avg_degree: int = 5
    in_dim: int = 8
    hidden: int = 16
    n_classes: int = 4
    fanouts: list = field(default_factory=lambda: [4, 3])
    batch_size: int = 8
    lr: float = 5e-3
    warmup: int = 2
    cache_size: int = 48
    max_smoothing: float = 0.1
    smoothing_step: float = 0.03
    drop_p: float = 0.3
    drop_decay: float = 0.9
    class_weights: list = field(default_factory=lambda: [1.0, 1.2, 0.9, 1.1])
    pin_staging: bool = False
    log_every: int = 1
