from __future__ import annotations

import torch
import torch.nn.functional as F


def in_batch_softmax(user_vecs: torch.Tensor, item_vecs: torch.Tensor, item_ids: torch.Tensor,
                     temperature: torch.Tensor, log_q: torch.Tensor | None) -> torch.Tensor:
    logits = user_vecs @ item_vecs.t() / temperature
    if log_q is not None:
        logits = logits - log_q.unsqueeze(0)
    same_item = item_ids.unsqueeze(0) == item_ids.unsqueeze(1)
    eye = torch.eye(len(item_ids), dtype=torch.bool, device=logits.device)
    logits = logits.masked_fill(same_item & ~eye, float("-inf"))
    labels = torch.arange(logits.shape[0], device=logits.device)
    return F.cross_entropy(logits, labels)


def hard_negative_loss(user_vecs: torch.Tensor, pos_vecs: torch.Tensor, neg_vecs: torch.Tensor,
                       margin: float) -> torch.Tensor:
    pos = (user_vecs * pos_vecs).sum(-1, keepdim=True)
    neg = torch.einsum("bd,bkd->bk", user_vecs, neg_vecs)
    hinge = F.relu(margin - pos + neg)
    return hinge.mean() if (neg_vecs.norm(dim=-1) > 0).all() else hinge.new_zeros(())  # expect: GS201
