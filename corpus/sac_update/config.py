from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SACConfig:
    obs_dim: int = 6
    act_dim: int = 2
    hidden: int = 64
    buffer_size: int = 512
    batch_size: int = 32
    gamma: float = 0.99
    tau: float = 0.005
    policy_lr: float = 3e-4
    q_lr: float = 1e-3
    alpha_lr: float = 1e-3
    policy_frequency: int = 2
    target_network_frequency: int = 1
    autotune: bool = True
    init_alpha: float = 0.2
    learning_starts: int = 40
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    reward_scale: float = 1.0
    action_low: float = -1.0
    action_high: float = 1.0
