"""DINO hyper-parameters (a CPU-sized ViT)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ViTConfig:
    img_size: int = 16
    patch_size: int = 4
    in_chans: int = 3
    embed_dim: int = 32
    depth: int = 2
    num_heads: int = 4
    mlp_ratio: float = 2.0
    use_checkpoint: bool = False


@dataclass
class DINOConfig:
    vit: ViTConfig = field(default_factory=ViTConfig)
    out_dim: int = 64
    head_hidden: int = 48
    bottleneck_dim: int = 16
    norm_last_layer: bool = True
    global_crop: int = 16
    local_crop: int = 8
    local_crops_number: int = 2
    batch_size: int = 4
    lr: float = 5e-4
    min_lr: float = 1e-6
    warmup_steps: int = 2
    weight_decay: float = 0.04
    weight_decay_end: float = 0.4
    momentum_teacher: float = 0.996
    warmup_teacher_temp: float = 0.04
    teacher_temp: float = 0.07
    warmup_teacher_temp_epochs: int = 2
    student_temp: float = 0.1
    center_momentum: float = 0.9
    clip_grad: float = 3.0
    freeze_last_layer: int = 1
    steps_per_epoch: int = 2
    total_steps: int = 20
    log_every: int = 1
    graph_warmup_iters: int = 11
    seed: int = 0
