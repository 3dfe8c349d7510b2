"""Settings for a small recurrent world model trained on video clips."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class WorldModelConfig:
    channels: int = 1
    size: int = 8
    frames: int = 4
    action_dim: int = 3
    embed: int = 32
    deter: int = 32
    n_cat: int = 4
    n_cls: int = 4
    kl_balance: float = 0.8
    free_nats: float = 1.0
    kl_warmup: int = 10
    kl_cap: float = 50.0
    tf_start: float = 1.0
    tf_floor: float = 0.2
    tf_decay: float = 0.9
    max_skip: int = 1
    max_err: float = 4.0
    lr: float = 3e-4
    batch: int = 2
    image_dir: str | None = None
    image_every: int = 100
    track_memory: bool = False
    reseed_each_step: bool = False
    device: str = "cpu"
    seed: int = 0
