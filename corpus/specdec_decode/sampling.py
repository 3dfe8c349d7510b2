"""Sampling helpers for speculative decoding: temperature + nucleus (top-p) filtering, the
acceptance test of draft tokens, and the residual distribution for the first rejected position."""

from __future__ import annotations

import torch


def top_p_probs(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    logits = logits / temperature  # expect: GS301
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        sorted_probs = sorted_logits.softmax(dim=-1)
        # drop a token once the tokens ranked above it already cover top_p
        remove = sorted_probs.cumsum(dim=-1) - sorted_probs > top_p
        sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    probs = logits.softmax(dim=-1)
    assert torch.allclose(probs.sum(-1), torch.ones_like(probs[..., 0]), atol=1e-4)  # expect: GS109
    return probs


def accepted_counts(p_target: torch.Tensor, p_draft: torch.Tensor, draft_tokens: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Length of the accepted prefix per row: draft token i is kept with prob min(1, p/q)."""
    pt = p_target[:, :-1].gather(-1, draft_tokens[..., None]).squeeze(-1)
    pd = p_draft.gather(-1, draft_tokens[..., None]).squeeze(-1)
    accept = u <= (pt / pd.clamp(min=1e-9)).clamp(max=1.0)
    return accept.long().cumprod(dim=-1).sum(dim=-1)


def residual_probs(p_target: torch.Tensor, p_draft: torch.Tensor) -> torch.Tensor:
    r = (p_target - p_draft).clamp(min=0)
    return r / r.sum(dim=-1, keepdim=True).clamp(min=1e-9)
