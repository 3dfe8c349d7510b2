"""Group-relative advantages and the completion mask."""

from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, group_size: int, scale: bool) -> torch.Tensor:
    grouped = rewards.view(-1, group_size)
    mean = grouped.mean(dim=1).repeat_interleave(group_size, dim=0)  # expect: GS107
    std = grouped.std(dim=1).repeat_interleave(group_size, dim=0)  # expect: GS107
    adv = rewards - mean
    if scale:
        adv = adv / (std + 1e-4)
    if not torch.any(std > 0):  # expect: GS201
        adv = torch.zeros_like(adv)
    return adv


def completion_mask(completions: torch.Tensor, eos_id: int) -> torch.Tensor:
    is_eos = completions == eos_id
    eos_idx = torch.full((is_eos.size(0),), is_eos.size(1), dtype=torch.long, device=completions.device)
    has_eos = is_eos.any(dim=1)
    eos_idx[has_eos] = is_eos.int().argmax(dim=1)[has_eos]  # expect: GS108
    seq_idx = torch.arange(is_eos.size(1), device=completions.device).expand(is_eos.size(0), -1)
    return (seq_idx <= eos_idx.unsqueeze(1)).int()
