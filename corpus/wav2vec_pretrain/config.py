from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Wav2VecConfig:
    seed: int = 0
    batch_size: int = 4
    num_samples: int = 800
    conv_channels: int = 32
    embed_dim: int = 32
    final_dim: int = 16
    num_groups: int = 2
    num_vars: int = 8
    mask_prob: float = 0.2
    mask_length: int = 3
    num_negatives: int = 5
    logit_temp: float = 0.1
    max_temp: float = 2.0
    min_temp: float = 0.5
    temp_decay: float = 0.995
    diversity_weight: float = 0.1
    feature_penalty: float = 10.0
    feature_grad_mult: float = 0.1
    peak_lr: float = 5e-4
    warmup_updates: int = 2
    hold_updates: int = 2
    decay_updates: int = 4
    final_lr_scale: float = 0.05
    weight_decay: float = 0.01
    clip_norm: float = 5.0
    log_interval: int = 100
    debug_dump: bool = False
