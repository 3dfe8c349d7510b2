"""Quantization-aware fine-tuning settings."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class QATConfig:
    in_channels: int = 3
    width: int = 8
    num_classes: int = 10
    image_size: int = 8
    num_samples: int = 48
    batch_size: int = 8
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-4
    total_steps: int = 20
    weight_bits: int = 8
    act_bits: int = 8
    start_bits: int = 8
    final_bits: int = 4
    bits_warmup: int = 2
    freeze_observers_after: int = 2
    freeze_bn_after: int = 2
    label_smoothing: float = 0.1
    class_weights: tuple[float, ...] = field(default_factory=lambda: (1.0,) * 10)
    loss_spike: float = 20.0
    clip: float = 5.0
    topk: int = 3
    sat_threshold: float = 0.5
    amp: bool = False
    verbose: bool = False
    async_stats: bool = False
    track_memory: bool = False
    ckpt_dir: str | None = None
    seed: int = 0
