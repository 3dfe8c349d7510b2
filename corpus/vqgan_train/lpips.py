"""A learned-perceptual-similarity loss with a small frozen feature network."""

from __future__ import annotations

import torch
import torch.nn as nn


def normalize_tensor(x: torch.Tensor, eps: float = 1e-10) -> torch.Tensor:
    norm_factor = torch.sqrt(torch.sum(x ** 2, dim=1, keepdim=True))
    return x / (norm_factor + eps)


class ScalingLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.tensor([-0.030, -0.088, -0.188])[None, :, None, None])
        self.register_buffer("scale", torch.tensor([0.458, 0.448, 0.450])[None, :, None, None])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.shift) / self.scale


class LPIPS(nn.Module):
    def __init__(self, layer_weights: tuple[float, ...] = (1.0, 0.5, 0.25)):
        super().__init__()
        self.scaling = ScalingLayer()
        chans = [3, 8, 16, 16]
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Conv2d(chans[i], chans[i + 1], 3, padding=1), nn.ReLU()) for i in range(3)
        )
        for p in self.parameters():
            p.requires_grad_(False)
        self.layer_weights = list(layer_weights)
        self._target_cache: dict = {}

    def reset_cache(self) -> None:
        self._target_cache = {}

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = []
        h = x
        for stage in self.stages:
            h = stage(h)
            feats.append(h)
        return feats

    def forward(self, inp: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        assert inp.shape == target.shape, "LPIPS inputs must have the same shape"
        key = id(target)  # expect: GS506
        if key not in self._target_cache:
            self._target_cache[key] = self.features(self.scaling(target))  # expect: GS503
        feats_t = self._target_cache[key]
        feats_i = self.features(self.scaling(inp))
        weights = torch.tensor(self.layer_weights, device=inp.device)  # expect: GS402
        val = torch.zeros(inp.shape[0], device=inp.device)
        for k, (fi, ft) in enumerate(zip(feats_i, feats_t)):
            diff = (normalize_tensor(fi) - normalize_tensor(ft)) ** 2
            val = val + weights[k] * diff.mean(dim=(1, 2, 3))
        return val
