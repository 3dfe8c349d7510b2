"""Episode statistics and a small text progress bar."""

from __future__ import annotations

import io
import logging

import torch

logger = logging.getLogger(__name__)


class ProgressBar:
    def __init__(self, total: int, stream=None):
        self.total = total
        self.n = 0
        self.stream = stream if stream is not None else io.StringIO()

    def update(self, n: int = 1) -> None:
        self.n += n  # expect: GS302

    def close(self) -> None:
        self.stream.write(f"{self.n}/{self.total}\n")


class EpisodeStats:
    def __init__(self, device: torch.device):
        self.recent = torch.zeros(0, device=device)
        self.returns: list[float] = []
        self.mean_return = 0.0

    def record(self, returns: torch.Tensor, dones: torch.Tensor) -> None:
        finished = dones > 0.5
        if finished.any():  # expect: GS201
            done_returns = returns[finished]  # expect: GS108
            self.recent = torch.cat([self.recent, done_returns])  # expect: GS404
            values = done_returns.tolist()  # expect: GS102
            self.returns.extend(values)  # expect: GS503
            self.mean_return = float(self.recent[-100:].mean())  # expect: GS105
            logger.debug("%d episodes, mean n-step return %.2f", len(self.returns), self.mean_return)  # expect: GS501
