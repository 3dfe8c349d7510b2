from __future__ import annotations

import tempfile
from dataclasses import dataclass, field


@dataclass
class NeRFConfig:
    num_freqs: int = 6
    hidden: int = 64
    n_coarse: int = 16
    n_fine: int = 16
    near: float = 0.5
    far: float = 3.5
    white_bkgd: bool = True
    batch_rays: int = 64
    num_rays: int = 512
    lr: float = 5e-3
    lr_decay: float = 0.98
    anneal_iters: int = 20
    deterministic_sampling: bool = True
    dump_predictions: bool = False
    out_dir: str = field(default_factory=tempfile.gettempdir)
    seed: int = 0
