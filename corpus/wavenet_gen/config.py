"""Streaming WaveNet settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class WaveNetConfig:
    quantization_channels: int = 64
    residual_channels: int = 16
    skip_channels: int = 16
    cond_channels: int = 8
    dilations: tuple[int, ...] = (1, 2, 4, 8, 1, 2)
    hop: int = 4


@dataclass
class StreamConfig:
    batch: int = 2
    temperature: float = 0.8
    dither: float = 1e-3
    silence_threshold: float = 0.05
    seed: int = 0
    reseed_each_step: bool = False
    profile: bool = False
    pinned_output: bool = False
    snapshot_path: str = ""
