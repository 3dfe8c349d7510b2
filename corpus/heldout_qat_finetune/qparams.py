"""Per-channel affine quantization parameters from observed ranges."""

from __future__ import annotations

import warnings

import torch


def per_channel_qparams(min_val: torch.Tensor, max_val: torch.Tensor, levels: int) -> tuple[torch.Tensor, torch.Tensor]:
    min_neg = torch.clamp(min_val, max=0.0)
    max_pos = torch.clamp(max_val, min=0.0)
    scale = (max_pos - min_neg).clamp(min=1e-8) / levels  # expect: GS301
    collapsed = scale[scale <= 1e-8]  # expect: GS108
    if collapsed.numel() > 0:  # expect: GS201
        warnings.warn(f"{collapsed.numel()} channels have a collapsed range")  # expect: GS501
    assert torch.all(scale > 0), "non-positive quantization scale"  # expect: GS201
    zero_point = torch.round(-min_neg / scale)
    return scale, zero_point


def broadcast_shape(x: torch.Tensor, ch_axis: int) -> list[int]:
    shape = [1] * x.dim()
    shape[ch_axis] = -1
    return shape
