"""Throughput / MFU accounting and a tiny in-memory metrics logger."""

from __future__ import annotations

import time
from collections import deque

import torch


class ThroughputMeter:
    def __init__(self, flops_per_token: float, peak_flops: float, window: int = 20):
        self.flops_per_token = flops_per_token
        self.peak_flops = peak_flops
        self.stamps: deque[tuple[float, int]] = deque(maxlen=window)

    def update(self, n_tokens: int) -> dict[str, float]:
        self.stamps.append((time.perf_counter(), n_tokens))  # expect: GS502, GS503
        if len(self.stamps) < 2:
            return {"tokens_per_s": 0.0, "mfu": 0.0}
        elapsed = max(self.stamps[-1][0] - self.stamps[0][0], 1e-9)
        tokens = sum(n for _, n in list(self.stamps)[1:])
        tps = tokens / elapsed
        return {"tokens_per_s": tps, "mfu": self.flops_per_token * tps / self.peak_flops}


class MetricsLogger:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def log(self, metrics: dict, step: int) -> None:
        self.records.append({"step": step, **metrics})  # expect: GS503


def global_param_norm(params) -> torch.Tensor:
    return torch.linalg.vector_norm(torch.stack([p.detach().norm() for p in params]))


def append_history(history: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    history = torch.cat([history, value.detach().reshape(1)])  # expect: GS404
    return history
