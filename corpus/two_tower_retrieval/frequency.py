from __future__ import annotations

import math

import torch


class StreamingFrequencyEstimator:
    """Hash-free variant of the streaming frequency estimate of Yi et al. (2019)."""

    def __init__(self, num_items: int, decay: float):
        self.decay = decay
        self.step = 0
        self.last_seen: dict[int, int] = {}
        self.delta = [float(num_items)] * num_items

    def update(self, item_ids: torch.Tensor) -> list[float]:
        self.step += 1  # expect: GS302
        probs = []
        for item in item_ids.tolist():  # expect: GS102
            prev = self.last_seen.get(item, 0)
            self.delta[item] = (1 - self.decay) * self.delta[item] + self.decay * (self.step - prev)  # expect: GS503
            self.last_seen[item] = self.step  # expect: GS503
            probs.append(1.0 / max(self.delta[item], 1.0))
        return probs

    def log_q(self, probs: list[float], device: torch.device) -> torch.Tensor:
        return torch.tensor([math.log(p) for p in probs], device=device)  # expect: GS402
