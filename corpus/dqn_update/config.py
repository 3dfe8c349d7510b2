"""Hyper-parameters of the Rainbow-style agent."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RainbowConfig:
    obs_dim: int = 6
    n_actions: int = 4
    hidden: int = 32
    capacity: int = 256
    batch_size: int = 16
    n_step: int = 3
    gamma: float = 0.97
    lr: float = 6.25e-4
    adam_eps: float = 1.5e-4
    alpha: float = 0.5
    beta0: float = 0.4
    beta_steps: int = 50
    prio_eps: float = 1e-3
    target_update: int = 2
    sigma0: float = 0.5
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_steps: int = 40
    huber_delta: float = 1.0
    max_grad_norm: float = 10.0
    deterministic_noise: bool = True
    profile: bool = False
    seed: int = 0
