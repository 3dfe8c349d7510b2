from __future__ import annotations

import torch
import torch.nn.functional as F


def contrastive_loss(x: torch.Tensor, y: torch.Tensor, negs: torch.Tensor, logit_temp: float) -> torch.Tensor:
    pos = F.cosine_similarity(x, y, dim=-1).unsqueeze(0)
    neg = F.cosine_similarity(x.unsqueeze(0), negs, dim=-1)
    collided = (negs == y.unsqueeze(0)).all(-1)
    if collided.any():  # expect: GS201
        neg = neg.masked_fill(collided, float("-inf"))
    logits = torch.cat([pos, neg], 0) / logit_temp
    target = logits.new_zeros(logits.shape[1], dtype=torch.long)
    return F.cross_entropy(logits.t(), target, reduction="sum")


def diversity_loss(avg_probs: torch.Tensor, num_vars: int) -> tuple[torch.Tensor, torch.Tensor]:
    if (avg_probs.sum(-1) <= 0).any():  # expect: GS201
        raise ValueError("empty codebook distribution")
    perplexity = torch.exp(-(avg_probs * torch.log(avg_probs + 1e-7)).sum(-1)).sum()
    total = avg_probs.shape[0] * num_vars
    return (total - perplexity) / total, perplexity
