"""Hyper-parameters of the toy Gaussian-splatting optimisation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SplatConfig:
    num_gaussians: int = 48
    capacity: int = 80
    image_size: int = 12
    num_cameras: int = 4
    max_sh_degree: int = 2
    sh_degree_interval: int = 2
    densify_interval: int = 2
    densify_grad_threshold: float = 1e-5
    min_opacity: float = 0.005
    opacity_reset_interval: int = 3
    lambda_dssim: float = 0.2
    position_lr_init: float = 1.6e-3
    position_lr_final: float = 1.6e-5
    position_lr_max_steps: int = 30
    feature_lr: float = 2.5e-3
    opacity_lr: float = 5e-2
    scaling_lr: float = 5e-3
    rotation_lr: float = 1e-3
    white_background: bool = False
    random_background: bool = False
    background_switch_step: int = 4
    profile: bool = False
    seed: int = 0
