"""Distillation losses."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def kd_kl(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    log_p = F.log_softmax(student_logits / temperature, dim=-1)  # expect: GS301
    q = F.softmax(teacher_logits / temperature, dim=-1)  # expect: GS301
    kl = F.kl_div(log_p, q, reduction="batchmean")
    if kl.isnan():  # expect: GS201
        kl = torch.zeros_like(kl)
    return kl * temperature * temperature  # expect: GS301


def feature_match(student_feat: torch.Tensor, teacher_feat: torch.Tensor) -> torch.Tensor:
    s = F.normalize(student_feat, dim=-1)
    t = F.normalize(teacher_feat.detach(), dim=-1)
    return (s - t).pow(2).sum(-1).mean()
