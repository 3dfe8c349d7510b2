"""Segmentation recipe settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SegConfig:
    n_classes: int = 4
    width: int = 16
    crop: int = 16
    eval_size: int = 24
    window: int = 16
    stride: int = 8
    batch_size: int = 2
    ignore_index: int = 255
    base_lr: float = 0.02
    poly_power: float = 0.9
    max_iters: int = 40
    momentum: float = 0.9
    weight_decay: float = 1e-4
    aux_weight: float = 0.4
    bg_reg: float = 1e-3
    cb_c: float = 1.02
    flip_tta: bool = True
    random_flip: bool = True
    keep_predictions: bool = False
    vis_dir: str = ""
    verbose_eval: bool = True
    amp: bool = False
    seed: int = 0
