"""Timestep and caption embeddings."""

from __future__ import annotations

import math

import torch
from torch.nn.utils.rnn import pad_sequence


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def encode_captions(token_ids: list[torch.Tensor], pad_id: int = 0) -> torch.Tensor:
    return pad_sequence(token_ids, batch_first=True, padding_value=pad_id)  # expect: GS408
