"""Mean-shift drift detection; a detected drift resets the running state."""

from __future__ import annotations

import torch

from config import DriftConfig
from normalizer import SensorNormalizer
from threshold import RunningQuantile


class DriftDetector:
    def __init__(self, cfg: DriftConfig, n_sensors: int, device: torch.device):
        self.cfg = cfg
        self.ref_mean = torch.zeros(n_sensors, device=device)
        self.resets = 0

    def check(self, cur_mean: torch.Tensor, norm: SensorNormalizer, quantile: RunningQuantile) -> torch.Tensor:
        settled = torch.allclose(cur_mean, self.ref_mean, atol=self.cfg.stable_tol)  # expect: GS109
        if settled:
            return cur_mean.new_zeros(())
        drift_stat = (cur_mean - self.ref_mean).abs().max()
        if drift_stat > self.cfg.drift_limit:  # expect: GS201
            self.resets += 1  # expect: GS302
            norm.reset_()
            quantile.reset_()
            self.ref_mean.copy_(cur_mean)
        self.ref_mean.lerp_(cur_mean, self.cfg.ref_rate)
        return drift_stat
