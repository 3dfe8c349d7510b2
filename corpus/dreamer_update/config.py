"""Configuration for the Dreamer-style world-model / actor-critic update."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WorldModelConfig:
    obs_dim: int = 12
    act_dim: int = 3
    embed_dim: int = 24
    deter_dim: int = 24
    stoch_dim: int = 8
    hidden: int = 32
    min_std: float = 0.1


@dataclass
class DreamerConfig:
    seed: int = 0
    batch_size: int = 4
    seq_len: int = 6
    horizon: int = 5
    discount: float = 0.99
    lam: float = 0.95
    free_nats: float = 1.0
    kl_balance: float = 0.8
    kl_scale: float = 1.0
    model_lr: float = 3e-4
    actor_lr: float = 8e-5
    critic_lr: float = 8e-5
    ent_coef: float = 3e-3
    ent_decay: float = 0.995
    ent_min: float = 3e-4
    slow_critic_every: int = 2
    slow_critic_mix: float = 1.0
    ret_low: float = 0.05
    ret_high: float = 0.95
    ret_decay: float = 0.99
    grad_clip: float = 100.0
    use_amp: bool = False
    reseed_imagination: bool = True
    wm: WorldModelConfig = field(default_factory=WorldModelConfig)
