"""Int8 quantisation helpers for KV pages."""

from __future__ import annotations

import torch


def absmax_scale(x: torch.Tensor, dim: tuple[int, ...]) -> torch.Tensor:
    return x.abs().amax(dim=dim).clamp(min=1e-6) / 127.0


def quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    assert (scale > 0).all(), "non-positive KV scale"  # expect: GS201
    return torch.clamp(torch.round(x / scale), -127, 127).to(torch.int8)


def dequantize(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.float() * scale
