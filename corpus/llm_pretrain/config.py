"""Model and training configuration for the small pre-training run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 32
    max_seq_len: int = 32
    rope_base: float = 10000.0
    grad_checkpointing: bool = False


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    batch_size: int = 8
    min_batch_size: int = 2
    batch_warmup_steps: int = 4
    seq_len: int = 32
    min_seq_len: int = 8
    seq_warmup_steps: int = 4
    grad_accum_steps: int = 2
    lr: float = 0.02
    min_lr_ratio: float = 0.1
    warmup_steps: int = 2
    total_steps: int = 20
    adamw_lr_ratio: float = 0.15
    weight_decay: float = 0.0
    momentum: float = 0.95
    ns_steps: int = 5
    z_loss_coef: float = 1e-4
    spike_factor: float = 3.0
    init_loss_ema: float = 4.5
    grad_clip: float = 1.0
    pad_id: int = 0
    ckpt_every: int = 4
    ckpt_dir: str = "checkpoints"
    peak_flops: float = 989e12
    seed: int = 0
