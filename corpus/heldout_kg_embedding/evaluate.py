"""Filtered link prediction: MRR and Hits@k over tail queries, known true tails removed."""

from __future__ import annotations

import torch

from model import RotatE


@torch.no_grad()
def filtered_metrics(
    model: RotatE, test: torch.Tensor, known: dict[tuple[int, int], set[int]], hits_at: tuple[int, ...]
) -> dict[str, float]:
    model.eval()
    n_entities = model.entity.shape[0]
    candidates = torch.arange(n_entities, device=test.device)
    ranks = []
    for h, r, t in test.tolist():
        query = torch.tensor([[h, r, t]], device=test.device)
        scores = model.score_negatives(query, candidates[None, :], "tail-batch")[0]
        filt = torch.zeros(n_entities, dtype=torch.bool)
        filt[list(known.get((h, r), set()) - {t})] = True
        scores[filt.to(scores.device)] = float("-inf")
        better = (scores > scores[t]).nonzero()
        ranks.append(1 + better.shape[0])
    model.train()
    rank_t = torch.tensor(ranks, dtype=torch.float)
    out = {"mrr": (1.0 / rank_t).mean().item()}
    for k in hits_at:
        out[f"hits@{k}"] = (rank_t <= k).float().mean().item()
    return out
