from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DetectorConfig:
    num_classes: int = 3
    image_size: int = 32
    stride: int = 8
    anchor_sizes: tuple[float, ...] = (6.0, 12.0)
    channels: int = 16
    box_weights: tuple[float, float, float, float] = (10.0, 10.0, 5.0, 5.0)
    score_thresh: float = 0.3
    pre_nms_topk: int = 20
    iou_thresh: float = 0.5
    match_iou: float = 0.5
    max_gt: int = 4
    seed: int = 0
    tta_noise: float = 0.0
    amp: bool = True
    profile: bool = False
    verbose: bool = False
    low_memory: bool = False
