"""Host-side reward functions, as used for verifiable-reward RL."""

from __future__ import annotations

import time

import torch

from tokenizer import CharTokenizer

REWARD_LATENCY: list[float] = []


def format_reward(text: str) -> float:
    return 1.0 if text.endswith("!") else 0.0


def length_reward(text: str, target_len: int) -> float:
    return -abs(len(text) - target_len) / max(1, target_len)


def score_completions(tok: CharTokenizer, completions: torch.Tensor, target_len: int,
                      len_weight: float) -> tuple[list[float], list[str]]:
    texts = [tok.decode(row) for row in completions.tolist()]  # expect: GS102
    t0 = time.monotonic()  # expect: GS502
    scores = [format_reward(t) + len_weight * length_reward(t, target_len) for t in texts]
    elapsed = time.monotonic() - t0  # expect: GS502
    REWARD_LATENCY.append(elapsed)  # expect: GS503
    return scores, texts
