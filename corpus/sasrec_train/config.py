from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class SASRecConfig:
    seed: int = 0
    n_items: int = 60
    n_users: int = 24
    min_hist: int = 3
    max_hist: int = 12
    hidden: int = 16
    heads: int = 2
    blocks: int = 1
    batch_size: int = 6
    lr: float = 0.05
    l2: float = 1e-3
    l2_decay: float = 0.9
    temperature: float = 1.0
    temp_floor: float = 0.5
    aux_prob: float = 0.3
    k: int = 5
    patience: int = 2
    trace_path: Optional[str] = None
