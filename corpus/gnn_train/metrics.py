from __future__ import annotations

from collections import defaultdict

import torch


class MetricTracker:
    def __init__(self, names: list[str]):
        self.names = list(names)
        self.history: dict[str, list[float]] = defaultdict(list)
        self.total_steps = 0

    def update(self, name: str, value: torch.Tensor) -> None:
        self.history[name].append(value.detach().float().mean().item())  # expect: GS101, GS503

    def step(self) -> None:
        self.total_steps += 1  # expect: GS302

    def mean(self, name: str) -> float:
        vals = self.history[name]
        return sum(vals) / max(len(vals), 1)


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (logits.argmax(-1) == y).float().mean()


def class_histogram(pred: torch.Tensor, num_classes: int) -> torch.Tensor:
    return torch.zeros(num_classes, device=pred.device).index_add_(0, pred, torch.ones_like(pred, dtype=torch.float))
