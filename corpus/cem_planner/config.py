"""Configuration for the CEM planner with a learned dynamics ensemble."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PlannerConfig:
    obs_dim: int = 4
    act_dim: int = 2
    hidden: int = 32
    ensemble_size: int = 4
    horizon: int = 5
    population: int = 64
    num_elites: int = 8
    iters: int = 3
    init_std: float = 0.5
    min_std: float = 0.05
    momentum: float = 0.1
    gamma: float = 0.97
    temperature: float = 0.5
    bonus_coef: float = 0.5
    bonus_decay: float = 0.9
    min_bonus: float = 0.01
    replan_every: int = 1
    noise_start: float = 1.0
    noise_end: float = 0.2
    noise_steps: int = 10
    clip_actions: bool = True
    reseed_each_plan: bool = True
    pin_host: bool = False
    goal: list[float] = field(default_factory=lambda: [1.0, -1.0, 0.0, 0.0])
    episode_len: int = 4
    seed: int = 0
