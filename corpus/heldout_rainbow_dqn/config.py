"""Rainbow DQN hyper-parameters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RainbowConfig:
    obs_dim: int = 6
    num_actions: int = 3
    hidden: int = 32
    atoms: int = 11
    v_min: float = -5.0
    v_max: float = 5.0
    n_step: int = 3
    gamma: float = 0.99
    batch_size: int = 8
    capacity: int = 128
    warmup_transitions: int = 40
    lr: float = 1e-3
    adam_eps: float = 1.5e-4
    alpha: float = 0.5
    beta0: float = 0.4
    beta_updates: int = 100
    prio_eps: float = 1e-6
    target_sync: int = 2
    max_grad_norm: float = 10.0
    loss_cap: float = 50.0
    skip_exploding: bool = True
    time_updates: bool = False
    total_updates: int = 100
    seed: int = 0
