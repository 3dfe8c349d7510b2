"""Next-token selection helpers."""

from __future__ import annotations

import torch


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    if k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def banned_token_mask(banned: list[list[int]], vocab_size: int, device: torch.device) -> torch.Tensor:
    mask = torch.zeros(len(banned), vocab_size, dtype=torch.bool, device=device)  # expect: GS408
    for row, ids in enumerate(banned):
        if ids:
            mask[row].index_fill_(0, torch.as_tensor(ids, device=device), True)  # expect: GS402
    return mask


def sample_next(logits: torch.Tensor, temperature: float, top_k: int) -> torch.Tensor:
    probs = top_k_filter(logits / temperature, top_k).softmax(-1)  # expect: GS301
    return torch.multinomial(probs, 1)


def finished_rows(finished: torch.Tensor) -> torch.Tensor:
    return torch.nonzero(finished, as_tuple=False).squeeze(-1)  # expect: GS107
