"""Configuration for the self-supervised depth trainer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DepthConfig:
    height: int = 16
    width: int = 24
    batch_size: int = 2
    num_scales: int = 2
    frame_ids: tuple[int, ...] = (-1, 1)
    min_depth: float = 0.1
    max_depth: float = 10.0
    ssim_weight: float = 0.85
    smooth_weight: float = 1e-3
    smooth_warmup: int = 4
    lr: float = 1e-3
    automask: bool = True
    clip_norm: float = 1.0
    dump_dir: str | None = None
    seed: int = 0
    eval_scales: list[float] = field(default_factory=lambda: [1.25, 1.25**2])
