"""Configuration dataclasses for the ViT training recipe."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    image_size: int = 16
    patch_size: int = 4
    dim: int = 32
    depth: int = 2
    heads: int = 4
    mlp_ratio: float = 2.0
    num_classes: int = 10
    drop_path_rate: float = 0.1
    grad_checkpointing: bool = True


@dataclass
class OptimConfig:
    base_lr: float = 5e-3
    min_lr: float = 1e-5
    warmup_steps: int = 2
    total_steps: int = 20
    momentum: float = 0.9
    weight_decay: float = 0.05
    max_grad_norm: float = 1.0


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    batch_size: int = 8
    label_smoothing: float = 0.1
    mixup_prob: float = 0.5
    mixup_alpha: float = 0.8
    ema_decay: float = 0.999
    use_amp: bool = True
    seed: int = 0
    log_every: int = 1
