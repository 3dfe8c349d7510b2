"""Console metrics and a tiny progress bar."""

from __future__ import annotations

import time

import torch


class MetricLogger:
    def __init__(self):
        self.values: dict[str, float] = {}

    def log(self, name: str, value: float) -> None:
        self.values[name] = value  # expect: GS503


class StepBar:
    def __init__(self, total: int):
        self.total = total
        self.n = 0

    def update(self, k: int = 1) -> None:
        self.n += k  # expect: GS302


def elapsed_since(since: float) -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # expect: GS106
    return time.perf_counter() - since  # expect: GS502
