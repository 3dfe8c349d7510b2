"""Configuration of the diffusion policy: chunking, noise schedule, EMA and optimisation."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ScheduleConfig:
    num_train_timesteps: int = 50
    num_inference_steps: int = 5
    beta_start: float = 1e-4
    beta_end: float = 2e-2
    clip_sample: float = 1.0


@dataclass
class EMAConfig:
    update_after_step: int = 0
    inv_gamma: float = 1.0
    power: float = 0.75
    min_decay: float = 0.0
    max_decay: float = 0.9999


@dataclass
class PolicyConfig:
    obs_dim: int = 10
    action_dim: int = 2
    n_obs_steps: int = 2
    horizon: int = 8
    n_action_steps: int = 4
    hidden: int = 64
    n_blocks: int = 2
    batch_size: int = 16
    lr: float = 3e-4
    encoder_lr: float = 1e-4
    weight_decay: float = 1e-6
    grad_clip: float = 1.0
    grad_checkpoint: bool = True
    use_amp: bool = False
    low_memory: bool = False
    action_low: tuple[float, ...] = (-1.0, -1.0)
    action_high: tuple[float, ...] = (1.0, 1.0)
    ensemble_k: float = 0.01
    seed: int = 0
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    ema: EMAConfig = field(default_factory=EMAConfig)
