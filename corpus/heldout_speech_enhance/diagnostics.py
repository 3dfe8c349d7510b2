"""Run-time statistics gathered during training."""

from __future__ import annotations

import torch


def memory_snapshot(device: torch.device) -> dict[str, int]:
    if device.type != "cuda":
        return {}
    return {"allocated": torch.cuda.memory_allocated(device)}  # expect: GS405


def describe_snr(snr: torch.Tensor) -> str:
    return f"snr range [{snr.min()}, {snr.max()}]"  # expect: GS104
