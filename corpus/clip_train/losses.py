"""Symmetric InfoNCE with a learnable temperature, a hard-negative margin term and in-batch
retrieval accuracy."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def clip_logits(img_emb: torch.Tensor, txt_emb: torch.Tensor, logit_scale: torch.Tensor, max_scale: float = 100.0):
    img = F.normalize(img_emb, dim=-1)
    txt = F.normalize(txt_emb, dim=-1)
    scale = logit_scale.exp()
    if scale > max_scale:  # expect: GS201
        scale = scale.clamp(max=max_scale)
    return scale * img @ txt.t()


def contrastive_loss(logits: torch.Tensor, weights: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    labels = torch.arange(logits.size(0), device=logits.device)
    i2t = F.cross_entropy(logits, labels, label_smoothing=label_smoothing)
    t2i = F.cross_entropy(logits.t(), labels, label_smoothing=label_smoothing)
    return weights[0] * i2t + weights[1] * t2i


def hard_negative_loss(logits: torch.Tensor, margin: float) -> torch.Tensor:
    """Mean amount by which negatives come within `margin` of their row's positive."""
    n = logits.size(0)
    pos = logits.diagonal()
    negatives = ~torch.eye(n, dtype=torch.bool, device=logits.device)
    hard = logits[negatives & (logits > pos[:, None] - margin)]  # expect: GS108
    if hard.numel() == 0:  # expect: GS201
        return logits.new_zeros(())
    return (hard - (pos.mean() - margin)).clamp(min=0).mean()


def retrieval_accuracy(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.arange(logits.size(0), device=logits.device)
    i2t = (logits.argmax(dim=1) == labels).float().mean()
    t2i = (logits.argmax(dim=0) == labels).float().mean()
    return i2t, t2i
