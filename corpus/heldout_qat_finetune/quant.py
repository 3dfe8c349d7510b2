"""Fake quantization with running min/max observers."""

from __future__ import annotations

import torch
import torch.nn as nn

from qparams import broadcast_shape, per_channel_qparams


class MinMaxObserver(nn.Module):
    def __init__(self, num_channels: int, ch_axis: int = 0):
        super().__init__()
        self.ch_axis = ch_axis
        self.register_buffer("min_val", torch.full((num_channels,), float("inf")))
        self.register_buffer("max_val", torch.full((num_channels,), float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dims = [d for d in range(x.dim()) if d != self.ch_axis]
        cur_min = x.detach().amin(dim=dims)
        cur_max = x.detach().amax(dim=dims)
        if not torch.isfinite(cur_min).all():  # expect: GS201
            return x
        self.min_val = torch.minimum(self.min_val, cur_min)  # expect: GS401
        self.max_val.copy_(torch.maximum(self.max_val, cur_max))
        return x


class FakeQuantize(nn.Module):
    def __init__(self, num_channels: int, bits: int, freeze_after: int, ch_axis: int = 0):
        super().__init__()
        self.bits = bits
        self.freeze_after = freeze_after
        self.ch_axis = ch_axis
        self.observer_updates = 0
        self.observer = MinMaxObserver(num_channels, ch_axis)

    @property
    def levels(self) -> int:
        return 2**self.bits - 1

    def set_bits(self, bits: int) -> None:
        self.bits = bits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.observer_updates < self.freeze_after:  # expect: GS301
            self.observer(x)
            self.observer_updates += 1  # expect: GS302
        scale, zero_point = per_channel_qparams(self.observer.min_val, self.observer.max_val, self.levels)
        shape = broadcast_shape(x, self.ch_axis)
        scale = scale.view(shape)
        zero_point = zero_point.view(shape)
        x_q = torch.clamp(torch.round(x / scale) + zero_point, 0, self.levels)  # expect: GS301
        x_dq = (x_q - zero_point) * scale
        return x + (x_dq - x).detach()
