from __future__ import annotations

import torch


class MetricsLogger:
    def __init__(self):
        self.rows: list = []

    def log(self, **values) -> None:
        self.rows.append(dict(values))  # expect: GS503


def per_class_accuracy(pred: torch.Tensor, labels: torch.Tensor, n_classes: int) -> list:
    return [(pred[labels == c] == c).float().mean() for c in range(n_classes)]  # expect: GS108


def overall_accuracy(pred: torch.Tensor, labels: torch.Tensor) -> float:
    return (pred == labels).float().mean().item()
