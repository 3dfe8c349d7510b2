"""Logit processors: repetition penalty, temperature, top-k, top-p."""

from __future__ import annotations

import torch


def apply_repetition_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    score = torch.gather(logits, 1, history)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return logits.scatter(1, history, score)


def top_k_filter(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    if top_k <= 0 or top_k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) - probs > top_p  # expect: GS301
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    if not drop.any():  # expect: GS201
        return logits
    return logits.masked_fill(drop, float("-inf"))


def next_token_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    if temperature <= 0.0:  # expect: GS301
        return greedy_one_hot(logits)
    logits = logits / max(temperature, 1e-5)  # expect: GS301
    logits = top_k_filter(logits, top_k)
    logits = top_p_filter(logits, top_p)
    return logits.softmax(dim=-1)


def greedy_one_hot(logits: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(logits.argmax(-1), num_classes=logits.shape[-1]).float()
