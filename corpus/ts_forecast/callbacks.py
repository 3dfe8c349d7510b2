"""Early stopping bookkeeping and the validation hook."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class EarlyStopping:
    patience: int
    min_delta: float = 1e-4
    best: float = math.inf
    bad_rounds: int = 0
    history: list[float] = field(default_factory=list)

    def step(self, value: float) -> bool:
        self.history.append(value)
        if value < self.best - self.min_delta:
            self.best = value
            self.bad_rounds = 0
        else:
            self.bad_rounds += 1
        return self.bad_rounds >= self.patience

    @property
    def should_stop(self) -> bool:
        return self.bad_rounds >= self.patience
