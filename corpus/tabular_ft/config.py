"""FT-Transformer training configuration."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FTConfig:
    n_numeric: int = 5
    cat_cardinalities: list[int] = field(default_factory=lambda: [4, 7, 3])
    d_token: int = 16
    n_heads: int = 2
    n_layers: int = 2
    n_classes: int = 2
    batch_size: int = 16
    lr: float = 3e-3
    head_lr: float = 1e-2
    weight_decay: float = 1e-5
    cutmix_prob: float = 0.5
    cutmix_alpha: float = 1.0
    label_smoothing: float = 0.05
    patience: int = 2
    freeze_tokenizer_epochs: int = 0
    use_amp: bool = True
    debug_checks: bool = True
    seed: int = 0
