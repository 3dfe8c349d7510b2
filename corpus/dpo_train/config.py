"""Configuration for the preference-optimisation runs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    vocab_size: int = 64
    d_model: int = 32
    n_layers: int = 2
    dropout: float = 0.1
    pad_token_id: int = 0


@dataclass
class DPOConfig:
    beta: float = 0.1
    beta_warmup_steps: int = 4
    label_smoothing: float = 0.0
    loss_type: str = "sigmoid"
    average_log_prob: bool = False
    lr: float = 5e-4
    warmup_steps: int = 2
    max_grad_norm: float = 1.0
    batch_size: int = 4
    seq_len: int = 12
    log_every: int = 1
    cache_reference: bool = True
    model: ModelConfig = field(default_factory=ModelConfig)
