"""Configuration for SAM-style mask-decoder fine-tuning."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SamConfig:
    image_size: int = 32
    patch: int = 8
    embed_dim: int = 32
    num_masks: int = 3
    batch_size: int = 4
    num_points: int = 2
    refine_iters: int = 2
    lr: float = 1e-3
    warmup_steps: int = 4
    focal_gamma: float = 2.0
    focal_weight: float = 20.0
    dice_weight: float = 1.0
    iou_weight: float = 1.0
    multimask: bool = True
    log_every: int = 1
    dump_masks: bool = False
    seed: int = 0
