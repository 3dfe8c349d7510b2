"""Distillation recipe settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DistillConfig:
    in_dim: int = 16
    n_classes: int = 5
    teacher_width: int = 64
    student_width: int = 24
    feature_dim: int = 32
    batch_size: int = 8
    lr: float = 0.05
    momentum: float = 0.9
    proj_lr: float = 1e-3
    kd_t_start: float = 4.0
    kd_t_end: float = 1.0
    alpha_max: float = 0.9
    alpha_ramp: int = 2
    feature_weight: float = 0.5
    feature_dropout: float = 0.1
    ema_decay: float = 0.999
    fp16: bool = False
    grad_clip: float = 2.0
    log_grad_norm: bool = True
    graph_mode: str = "step"
    metrics_path: str = ""
    ckpt_dir: str = ""
    ckpt_every: int = 2
    seed: int = 0
    class_prior: tuple = (0.3, 0.2, 0.2, 0.15, 0.15)
