"""Optimizer and schedules for QAT fine-tuning."""

from __future__ import annotations

import torch


def build_optimizer(model: torch.nn.Module, cfg) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.dim() == 1 or name.endswith("bias") else decay).append(p)
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, nesterov=True)


def bits_at(it: int, cfg) -> int:
    return cfg.start_bits if it < cfg.bits_warmup else cfg.final_bits
