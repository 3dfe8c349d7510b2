from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HiFiGANConfig:
    seed: int = 0
    sample_rate: int = 8000
    segment_len: int = 256
    hop: int = 32
    n_mels: int = 16
    n_fft: int = 128
    batch_size: int = 2
    clip_seconds: float = 0.2
    lr: float = 2e-4
    lr_decay: float = 0.999
    adam_betas: tuple = (0.8, 0.99)
    mel_weight: float = 45.0
    fm_weight: float = 2.0
    fm_decay: float = 0.98
    periods: list = field(default_factory=lambda: [2, 3, 5])
    log_every: int = 1
    pin_host: bool = False
    upsample: tuple = (4, 8)
