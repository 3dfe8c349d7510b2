from dataclasses import dataclass


@dataclass
class RankerConfig:
    seed: int = 0
    context_dim: int = 12
    dim: int = 8
    n_items: int = 24
    slate_size: int = 4
    requests_per_batch: int = 6
    prior_var: float = 1.0
    noise_var: float = 0.25
    min_propensity: float = 1e-3
    explore_start: float = 1.0
    explore_end: float = 0.1
    explore_horizon: int = 50
    forget_start: float = 0.999
    encoder_lr: float = 1e-3
    reseed_each_update: bool = False
    checkpoint_posterior: bool = False
