"""Complex ratio mask estimator over magnitude features."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import EnhanceConfig


class MaskEstimator(nn.Module):
    def __init__(self, cfg: EnhanceConfig):
        super().__init__()
        self.cfg = cfg
        n_bins = cfg.n_fft // 2 + 1
        self.norm = nn.LayerNorm(n_bins)
        self.rnn = nn.GRU(n_bins, cfg.hidden, batch_first=True)
        self.real = nn.Linear(cfg.hidden, n_bins)
        self.imag = nn.Linear(cfg.hidden, n_bins)

    def forward(self, spec: torch.Tensor) -> torch.Tensor:
        if spec.dim() == 2:
            spec = spec.unsqueeze(0)
        feats = torch.log1p(spec.abs()).transpose(1, 2)
        assert torch.isfinite(feats).all(), "non-finite features"  # expect: GS201
        if feats.abs().max() > self.cfg.mask_clip:  # expect: GS201
            feats = feats.clamp(-self.cfg.mask_clip, self.cfg.mask_clip)
        h, _ = self.rnn(self.norm(feats))
        mask = torch.complex(torch.tanh(self.real(h)), torch.tanh(self.imag(h))).transpose(1, 2)
        mask = mask if mask.abs().amax() < 4.0 else mask / mask.abs().amax()  # expect: GS201
        floor = torch.tensor(self.cfg.mask_floor, device=spec.device)  # expect: GS402
        return mask + floor
