"""Logit processors: repetition penalty, temperature, nucleus filtering."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def apply_repetition_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    if history.numel() == 0:
        return logits
    seen = torch.unique(history).unsqueeze(0).expand(logits.shape[0], -1)  # expect: GS107
    picked = logits.gather(1, seen)
    picked = torch.where(picked < 0, picked * penalty, picked / penalty)
    return logits.scatter(1, seen, picked)


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    remove = probs.cumsum(-1) - probs > top_p
    sorted_logits[remove] = float("-inf")
    return torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)


def next_token_probs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    if temperature <= 0.0:  # expect: GS301
        return F.one_hot(logits.argmax(-1), num_classes=logits.shape[-1]).float()
    logits = logits / temperature  # expect: GS301
    if top_p < 1.0:
        logits = top_p_filter(logits, top_p)
    return logits.softmax(-1)
