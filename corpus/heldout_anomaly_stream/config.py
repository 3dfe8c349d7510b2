"""Configuration of the streaming anomaly detector."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AEConfig:
    n_sensors: int = 8
    hidden: int = 16
    latent: int = 4
    checkpoint_decoder: bool = True


@dataclass
class ThresholdConfig:
    window: int = 192
    quantile: float = 0.95
    init_threshold: float = 1.0
    quantile_step: float = 0.05
    anneal: float = 0.9


@dataclass
class DriftConfig:
    drift_limit: float = 1.2
    stable_tol: float = 1e-4
    ref_rate: float = 0.05


@dataclass
class StreamConfig:
    model: AEConfig = field(default_factory=AEConfig)
    threshold: ThresholdConfig = field(default_factory=ThresholdConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    batch_size: int = 8
    lr: float = 0.01
    norm_momentum: float = 0.9
    max_abs: float = 1e6
    warmup_steps: int = 2
    warmup_iters: int = 3
    profile: bool = False
    alert_path: str = ""
    seed: int = 0
