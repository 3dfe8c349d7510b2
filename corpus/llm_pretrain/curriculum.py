"""Batch-size and sequence-length warm-up curricula and the learning-rate schedule."""

from __future__ import annotations

import math

from config import TrainConfig


def batch_size_at(step: int, cfg: TrainConfig) -> int:
    if step >= cfg.batch_warmup_steps:
        return cfg.batch_size
    frac = (step + 1) / cfg.batch_warmup_steps
    blocks = max(1, round(cfg.batch_size * frac / cfg.min_batch_size))
    return min(cfg.batch_size, blocks * cfg.min_batch_size)


def seq_len_at(step: int, cfg: TrainConfig) -> int:
    if step >= cfg.seq_warmup_steps:
        return cfg.seq_len
    length = cfg.min_seq_len * 2 ** (step * int(math.log2(cfg.seq_len // cfg.min_seq_len)) // cfg.seq_warmup_steps)
    return min(cfg.seq_len, length)


def lr_at(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.total_steps - cfg.warmup_steps))
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return cfg.lr * (cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * cosine)
