"""Hyper-parameters for PointNet++-style part segmentation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SegConfig:
    num_classes: int = 4
    min_points: int = 40
    max_points: int = 64
    batch_size: int = 4
    sa1_npoint: int = 16
    sa1_radius: float = 0.4
    sa1_nsample: int = 8
    sa2_npoint: int = 4
    sa2_radius: float = 0.8
    sa2_nsample: int = 8
    width: int = 16
    lr: float = 0.05
    lr_decay: float = 0.7
    decay_step: int = 2
    lr_floor: float = 1e-3
    bn_momentum: float = 0.1
    bn_decay: float = 0.5
    bn_decay_step: int = 2
    bn_momentum_floor: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 1e-4
    max_grad_norm: float = 5.0
    jitter_sigma: float = 0.01
    jitter_clip: float = 0.05
    augment: bool = True
    amp: bool = False
    grad_checkpoint: bool = False
    skip_nonfinite: bool = True
    save_every: int = 0
    trace_len: int = 16
    ckpt_path: str = "seg_last.pt"
    seed: int = 0
