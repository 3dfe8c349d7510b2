"""Residual layers and the per-layer input queues of incremental (fast) WaveNet generation."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


class ConvQueue:
    """Ring buffer holding the last `dilation` inputs of one dilated layer."""

    def __init__(self, batch: int, channels: int, dilation: int, device: torch.device):
        self.dilation = dilation
        self.buf = torch.zeros(batch, channels, dilation, device=device)
        self.head = 0

    def reset(self) -> None:
        self.buf.zero_()
        self.head = 0

    def push_pop(self, x: torch.Tensor) -> torch.Tensor:
        oldest = self.buf[:, :, self.head].clone()  # expect: GS301
        self.buf[:, :, self.head] = x  # expect: GS301
        self.head = (self.head + 1) % self.dilation  # expect: GS302
        return oldest


class ShiftQueue:
    """Queue for short dilations: shift left, append on the right."""

    def __init__(self, batch: int, channels: int, dilation: int, device: torch.device):
        self.buf = torch.zeros(batch, channels, dilation, device=device)

    def reset(self) -> None:
        self.buf.zero_()

    def push_pop(self, x: torch.Tensor) -> torch.Tensor:
        oldest = self.buf[:, :, 0]
        self.buf = torch.roll(self.buf, shifts=-1, dims=2)  # expect: GS401
        self.buf[:, :, -1] = x
        return oldest


def make_queue(batch: int, channels: int, dilation: int, device: torch.device):
    if dilation <= 2:
        return ShiftQueue(batch, channels, dilation, device)
    return ConvQueue(batch, channels, dilation, device)


class ResidualLayer(nn.Module):
    def __init__(self, res: int, skip: int, cond: int, dilation: int):
        super().__init__()
        self.dilation = dilation
        self.conv_past = nn.Linear(res, 2 * res)
        self.conv_cur = nn.Linear(res, 2 * res, bias=False)
        self.cond_proj = nn.Linear(cond, 2 * res, bias=False)
        self.res_out = nn.Linear(res, res)
        self.skip_out = nn.Linear(res, skip)

    def incremental(self, x: torch.Tensor, past: torch.Tensor, cond: torch.Tensor):
        h = self.conv_past(past) + self.conv_cur(x) + self.cond_proj(cond)
        a, b = h.chunk(2, dim=-1)
        z = torch.tanh(a) * torch.sigmoid(b)
        scale = torch.tensor(math.sqrt(0.5), device=x.device)  # expect: GS402
        return (x + self.res_out(z)) * scale, self.skip_out(z)
