"""Hyper-parameters for DDPG with hindsight experience replay on a goal-reaching toy task."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HERConfig:
    obs_dim: int = 4
    goal_dim: int = 2
    act_dim: int = 2
    hidden: int = 32
    max_u: float = 1.0
    episode_len: int = 6
    batch_size: int = 16
    buffer_episodes: int = 64
    replay_k: int = 4
    gamma: float = 0.98
    polyak: float = 0.95
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    action_l2: float = 1.0
    clip_obs: float = 200.0
    clip_range: float = 5.0
    norm_eps: float = 0.01
    max_grad: float = 10.0
    learning_starts: int = 2
    ou_theta: float = 0.15
    ou_sigma: float = 0.2
    random_eps: float = 0.3
    distance_threshold: float = 0.3
    goal_weights: tuple[float, ...] = field(default_factory=lambda: (1.0, 1.0))
    save_dir: str | None = None
    reset_peak_stats: bool = False
    grad_checkpoint: bool = True
    seed: int = 0
