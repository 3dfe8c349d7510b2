"""Typical acceptance (Medusa-2): accept a proposal when its posterior probability beats an
entropy-dependent threshold."""

from __future__ import annotations

import torch


def greedy_acceptance(cand_logits: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    match = (cand_logits[:, :-1].argmax(-1) == candidates[:, 1:]).long()
    return match.cumprod(dim=1).sum(dim=1)


def typical_acceptance(
    cand_logits: torch.Tensor,
    candidates: torch.Tensor,
    temperature: float,
    threshold: float,
    alpha: float,
) -> torch.Tensor:
    if temperature == 0.0:  # expect: GS301
        return greedy_acceptance(cand_logits, candidates)
    probs = torch.softmax(cand_logits[:, :-1] / temperature, dim=-1)  # expect: GS301
    cand_probs = probs.gather(-1, candidates[:, 1:, None]).squeeze(-1)
    entropy = -(probs * torch.log(probs + 1e-5)).sum(-1)
    cutoff = torch.minimum(torch.full_like(entropy, threshold), alpha * torch.exp(-entropy))
    accepted = (cand_probs > cutoff).long().cumprod(dim=1)
    depth = accepted.shape[1]
    while depth > 0 and not accepted[:, depth - 1].any():  # expect: GS201
        depth -= 1
    return accepted[:, :depth].sum(dim=1)
