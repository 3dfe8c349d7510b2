from __future__ import annotations

import tempfile
from dataclasses import dataclass, field


@dataclass
class MoCoConfig:
    image_size: int = 8
    channels: int = 3
    width: int = 16
    dim: int = 32
    queue_size: int = 64
    temperature: float = 0.2
    base_momentum: float = 0.99
    lr: float = 0.03
    batch_size: int = 16
    crop_pad: int = 2
    flip_prob: float = 0.5
    jitter: float = 0.4
    distributed: bool = False
    dump_queue_stats: bool = False
    out_dir: str = field(default_factory=tempfile.gettempdir)
    seed: int = 0
    topk: tuple[int, ...] = (1, 5)
