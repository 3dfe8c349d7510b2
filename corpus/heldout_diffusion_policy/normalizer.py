"""Min-max action normalisation to [-1, 1], as the diffusion model is trained on."""

from __future__ import annotations

from typing import Sequence

import torch


class ActionNormalizer:
    def __init__(self, low: Sequence[float], high: Sequence[float]):
        self.low_vals = list(low)
        self.high_vals = list(high)
        self.low = torch.tensor(self.low_vals)

    def normalize(self, actions: torch.Tensor) -> torch.Tensor:
        low = self.low.to(actions.device)  # expect: GS402
        high = torch.tensor(self.high_vals, device=actions.device)  # expect: GS402
        assert ((actions >= low) & (actions <= high)).all(), "demonstration action out of bounds"  # expect: GS201
        return 2.0 * (actions - low) / (high - low) - 1.0

    def unnormalize(self, x: torch.Tensor) -> torch.Tensor:
        low = self.low.to(x.device)
        high = torch.tensor(self.high_vals, device=x.device)
        return (x.clamp(-1.0, 1.0) + 1.0) * 0.5 * (high - low) + low
