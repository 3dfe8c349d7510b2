"""Hyper-parameters for the small ConvNeXt/Swin-style classifier."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SwinConfig:
    image_size: int = 16
    in_chans: int = 3
    num_classes: int = 10
    dims: tuple[int, ...] = (16, 32)
    depths: tuple[int, ...] = (1, 1)
    patch: int = 4
    layer_scale_init: float = 1e-2
    drop_path_max: float = 0.1
    drop_path_warmup: int = 4
    label_smoothing: float = 0.1
    class_weights: tuple[float, ...] = field(default_factory=lambda: tuple(1.0 for _ in range(10)))
    base_lr: float = 2e-3
    min_lr: float = 1e-5
    warmup_steps: int = 2
    total_steps: int = 20
    layer_decay: float = 0.75
    weight_decay: float = 0.05
    clip_grad: float = 1.0
    ema_decay: float = 0.9998
    spike_threshold: float = 10.0
    amp: bool = True
    grad_checkpointing: bool = True
    batch_size: int = 8
    distributed: bool = False
    verbose: bool = False
    warmup_iters: int = 3
    seed: int = 0
