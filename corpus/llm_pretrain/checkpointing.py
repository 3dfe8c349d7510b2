"""Checkpoint writing."""

from __future__ import annotations

import os

import torch


def save_checkpoint(model: torch.nn.Module, optimizers: dict, step: int, ckpt_dir: str, extra: dict) -> str:
    os.makedirs(ckpt_dir, exist_ok=True)  # expect: GS504
    state = {
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},  # expect: GS103
        "optimizers": {name: opt.state_dict() for name, opt in optimizers.items()},
        "step": step,
        **extra,
    }
    path = os.path.join(ckpt_dir, f"step_{step:06d}.pt")
    torch.save(state, path)  # expect: GS504
    return path
