"""Learning-rate, layer-decay and stochastic-depth schedules."""

from __future__ import annotations

import math

import torch.nn as nn


def cosine_lr(it: int, base_lr: float, min_lr: float, warmup: int, total: int) -> float:
    if it < warmup:
        return base_lr * (it + 1) / warmup
    progress = min(1.0, (it - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def drop_path_at(it: int, max_rate: float, warmup: int) -> float:
    return max_rate * min(1.0, it / max(1, warmup))


def layer_id(name: str, num_layers: int) -> int:
    if name.startswith("stem"):
        return 0
    if name.startswith("stages.") or name.startswith("downsamples."):
        return int(name.split(".")[1]) + 1
    return num_layers - 1


def layer_decay_groups(model: nn.Module, weight_decay: float, layer_decay: float) -> list[dict]:
    num_layers = len(model.stages) + 2
    groups: dict[tuple[int, bool], dict] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_decay = p.ndim == 1 or name.endswith(".bias") or name.endswith("gamma")
        lid = layer_id(name, num_layers)
        key = (lid, no_decay)
        if key not in groups:
            groups[key] = {
                "params": [],
                "weight_decay": 0.0 if no_decay else weight_decay,
                "lr_scale": layer_decay ** (num_layers - 1 - lid),
            }
        groups[key]["params"].append(p)
    return [groups[k] for k in sorted(groups)]
