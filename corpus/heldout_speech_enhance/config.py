"""Hyper-parameters of the speech enhancement recipe."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EnhanceConfig:
    n_fft: int = 64
    hop: int = 16
    seg_len: int = 512
    batch_size: int = 4
    hidden: int = 32
    lr: float = 1e-3
    snr_low: float = -5.0
    snr_high: float = 10.0
    vad_threshold: float = 0.02
    mask_floor: float = 0.05
    mask_clip: float = 1e3
    warmup_steps: int = 10
    log_every: int = 2
    grad_clip: float = 5.0
    seed: int = 0
