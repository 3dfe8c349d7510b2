"""Configuration of the multimodal motion forecaster."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ForecastConfig:
    hist_len: int = 8
    fut_len: int = 12
    n_modes: int = 6
    dim: int = 32
    n_blocks: int = 2
    scenes_per_batch: int = 4
    max_agents: int = 5
    lr: float = 5e-3
    conf_lr: float = 1e-2
    temp0: float = 2.0
    tf_start: float = 1.0
    tf_decay: float = 0.8
    tf_min: float = 0.1
    cls_weight_start: float = 1.0
    cls_weight_end: float = 0.2
    coord_limit: float = 50.0
    log_every: int = 2
    grad_ckpt: bool = True
    deterministic_noise: bool = False
    free_cache_every_step: bool = False
    write_scene_log: bool = False
    seed: int = 0
