"""Contrastive objective over in-batch, hard and queued negatives."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def contrastive_logits(q: torch.Tensor, p: torch.Tensor, hard: torch.Tensor, bank: torch.Tensor,
                       logit_scale: torch.Tensor) -> torch.Tensor:
    candidates = torch.cat([p, hard, bank], dim=0)
    return q @ candidates.T * logit_scale


def margin_penalty(pos: torch.Tensor, hard: torch.Tensor, margins: torch.Tensor) -> torch.Tensor:
    gap = pos.unsqueeze(-1) - hard.unsqueeze(-1) - margins
    if (gap > 0).all():  # expect: GS201
        return gap.new_zeros(())
    return F.relu(-gap).mean()


def recall_at_k(scores: torch.Tensor, gold: torch.Tensor, k: int) -> float:
    topk = scores.topk(k, dim=-1).indices.tolist()
    hits = [int(g) in row for g, row in zip(gold.tolist(), topk)]
    return sum(hits) / len(hits)
