"""Sampling helpers: temperature, top-k, multinomial."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def top_k_filter(logits: torch.Tensor, k: int | None) -> torch.Tensor:
    if k is None:
        return logits
    k = min(k, logits.size(-1))
    v, _ = torch.topk(logits, k)
    logits = logits.clone()
    logits[logits < v[:, [-1]]] = -float("inf")  # expect: GS402
    return logits


def sample_next(logits: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    logits = logits / temperature  # expect: GS301
    logits = top_k_filter(logits, top_k)
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1)
