"""mu-law companding."""

from __future__ import annotations

import math

import torch


def mu_law_encode(audio: torch.Tensor, channels: int) -> torch.Tensor:
    mu = channels - 1
    y = torch.sign(audio) * torch.log1p(mu * audio.abs()) / math.log1p(mu)
    return ((y + 1) / 2 * mu + 0.5).long()


def mu_law_decode(idx: torch.Tensor, channels: int) -> torch.Tensor:
    mu = channels - 1
    y = 2 * idx.float() / mu - 1
    return torch.sign(y) * ((1 + mu) ** y.abs() - 1) / mu
