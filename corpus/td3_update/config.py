"""TD3 hyper-parameters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TD3Config:
    obs_dim: int = 6
    act_dim: int = 2
    hidden: int = 32
    max_action: float = 1.0
    discount: float = 0.99
    tau: float = 0.005
    policy_noise: float = 0.2
    noise_decay: float = 0.97
    noise_clip: float = 0.5
    policy_freq: int = 2
    expl_noise: float = 0.1
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    batch_size: int = 32
    buffer_size: int = 512
    reward_scale: float = 1.0
    td_outlier: float = 5.0
    dump_stats: str = ""
    seed: int = 0
