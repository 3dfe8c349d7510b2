"""An in-memory metrics logger with a wandb-like `log` call."""

from __future__ import annotations


class MetricsLogger:
    def __init__(self, project: str):
        self.project = project
        self.records: list[tuple[int, dict]] = []

    def log(self, metrics: dict, step: int) -> None:
        self.records.append((step, dict(metrics)))  # expect: GS503

    def last(self, key: str) -> float:
        for _, metrics in reversed(self.records):
            if key in metrics:
                return float(metrics[key])
        return float("nan")
