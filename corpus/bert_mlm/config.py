"""Configuration for the masked-LM pre-training recipe."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MLMConfig:
    vocab_size: int = 96
    hidden: int = 32
    layers: int = 2
    heads: int = 4
    max_len: int = 24
    max_words: int = 24
    batch_size: int = 4
    mask_prob: float = 0.3
    replace_prob: float = 0.8
    random_prob: float = 0.1
    accum_steps: int = 2
    peak_lr: float = 3e-3
    warmup_steps: int = 2
    total_steps: int = 20
    init_loss_scale: float = 256.0
    scale_window: int = 4
    max_grad_norm: float = 1.0
    eval_every: int = 2
    grad_checkpointing: bool = True
    use_amp: bool = False
    track_memory: bool = True
    skip_overflow_steps: bool = True
    pad_id: int = 0
    cls_id: int = 1
    sep_id: int = 2
    mask_id: int = 3
    ignore_index: int = -100
    special_ids: tuple = (0, 1, 2, 3)
    seed: int = 0
    tags: dict = field(default_factory=dict)
