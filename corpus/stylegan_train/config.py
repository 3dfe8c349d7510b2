"""Hyper-parameters of the small StyleGAN2 trainer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StyleGANConfig:
    z_dim: int = 16
    w_dim: int = 16
    map_layers: int = 2
    num_ws: int = 4
    channels: int = 8
    img_res: int = 8
    img_channels: int = 3
    batch_size: int = 4
    lr_g: float = 2e-3
    lr_d: float = 2e-3
    betas: tuple[float, float] = (0.0, 0.99)
    style_mixing_prob: float = 0.9
    r1_gamma: float = 1.0
    r1_interval: int = 2
    pl_interval: int = 2
    pl_weight: float = 2.0
    pl_decay: float = 0.01
    ada_target: float = 0.6
    ada_speed: float = 0.05
    ema_kimg: float = 0.01
    ema_rampup: float = 0.05
    d_clip: float = 10.0
    use_amp: bool = False
    track_memory: bool = False
    seed: int = 0
