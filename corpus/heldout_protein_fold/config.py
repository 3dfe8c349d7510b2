"""Configuration for the AlphaFold-lite structure model."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    n_res: int = 12
    n_seq: int = 4
    n_tokens: int = 22
    c_msa: int = 16
    c_pair: int = 8
    n_blocks: int = 2
    n_heads: int = 2
    n_dist_bins: int = 8
    n_plddt_bins: int = 10
    max_recycle: int = 3
    recycle_tol: float = 1e-3
    msa_dropout: float = 0.15
    use_checkpoint: bool = True
    batch_size: int = 2


@dataclass
class LossConfig:
    bin_edges: tuple = (2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0)
    fape_clamp: float = 10.0
    fape_weight: float = 0.5
    violation_weight: float = 0.1
    violation_every: int = 2
    plddt_weight: float = 0.01


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 2
    total_steps: int = 20
    clip_norm: float = 1.0
    ema_max: float = 0.999
    low_conf: float = 50.0
    warmup_iters: int = 3
    track_memory: bool = False
    dump_dir: str = ""
    seed: int = 0
