"""Configuration of the char-CNN + BiLSTM + CRF tagger."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NERConfig:
    labels: tuple[str, ...] = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG")
    word_vocab: int = 50
    char_vocab: int = 30
    max_word_len: int = 6
    word_dim: int = 16
    char_dim: int = 8
    char_filters: int = 12
    hidden: int = 16
    dropout: float = 0.1
    word_dropout: float = 0.05
    label_smoothing: float = 0.1
    token_loss_weight: float = 0.5
    encoder_lr: float = 0.05
    crf_lr: float = 0.01
    lr_decay: float = 0.5
    max_grad_norm: float = 5.0
    max_loss: float = 1e4
    batch_size: int = 6
    epochs: int = 3
    patience: int = 2
    min_delta: float = 1e-4
    amp: bool = True
    metrics_path: str | None = None
    seed: int = 0
    unk_idx: int = 1
    pad_idx: int = 0
    extra: dict = field(default_factory=dict)
