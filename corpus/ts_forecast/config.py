"""Configuration for the quantile seq2seq forecaster."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ForecastConfig:
    seed: int = 0
    batch_size: int = 8
    min_lookback: int = 12
    max_lookback: int = 24
    horizon: int = 6
    season: int = 4
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    quantiles: tuple[float, ...] = (0.1, 0.5, 0.9)
    norm_eps: float = 1e-5
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 2
    total_steps: int = 100
    weight_decay: float = 1e-2
    grad_clip: float = 1.0
    tf_start: float = 1.0
    tf_decay: float = 0.97
    tf_min: float = 0.1
    input_noise: float = 0.05
    jitter_std: float = 0.02
    patience: int = 3
    val_every: int = 2
    use_amp: bool = False
    grad_ckpt: bool = True
    reseed_every_step: bool = True
    track_activations: bool = False
    dump_batches: bool = False
    out_dir: str = "forecast_runs"
