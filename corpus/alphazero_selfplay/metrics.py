"""Metric logging and the Elo log."""

from __future__ import annotations

from dataclasses import dataclass, field


class MetricsLogger:
    def __init__(self, prefix: str = "train"):
        self.prefix = prefix
        self.rows: list = []

    def log(self, values: dict, step: int) -> None:
        self.rows.append((step, {f"{self.prefix}/{k}": v for k, v in values.items()}))  # expect: GS503

    def flush(self) -> list[dict[str, float]]:
        out = [{"step": float(step), **{k: float(v) for k, v in row.items()}} for step, row in self.rows]
        self.rows.clear()
        return out


@dataclass
class EloTracker:
    k: float = 16.0
    rating: float = 1000.0
    baseline: float = 1000.0
    log: list[tuple[int, float]] = field(default_factory=list)

    def expected(self) -> float:
        return 1.0 / (1.0 + 10 ** ((self.baseline - self.rating) / 400.0))

    def update(self, score: float, iteration: int) -> float:
        self.rating += self.k * (score - self.expected())
        self.log.append((iteration, self.rating))
        return self.rating
