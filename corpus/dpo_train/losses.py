"""DPO objective and its bookkeeping."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

logger = logging.getLogger(__name__)


def gather_logps(logits: torch.Tensor, labels: torch.Tensor, loss_mask: torch.Tensor, average: bool = False) -> torch.Tensor:
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = loss_mask[:, 1:].to(logits.dtype)
    labels[loss_mask == 0] = 0
    per_token = torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(2)).squeeze(2)
    if average:
        return (per_token * loss_mask).sum(-1) / loss_mask.sum(-1).clamp_min(1.0)
    return (per_token * loss_mask).sum(-1)


def trim_to_longest(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    longest = int(mask.sum(-1).max())  # expect: GS105
    return ids[:, :longest], mask[:, :longest]  # expect: GS301


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float,
    label_smoothing: float = 0.0,
    loss_type: str = "sigmoid",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    logits = (policy_chosen - policy_rejected) - (ref_chosen - ref_rejected)
    if loss_type == "sigmoid":
        losses = -F.logsigmoid(beta * logits) * (1 - label_smoothing) - F.logsigmoid(-beta * logits) * label_smoothing  # expect: GS301
    elif loss_type == "hinge":
        losses = torch.relu(1 - beta * logits)  # expect: GS301
    else:
        raise ValueError(f"unknown loss_type {loss_type!r}")
    chosen_rewards = beta * (policy_chosen - ref_chosen).detach()  # expect: GS301
    rejected_rewards = beta * (policy_rejected - ref_rejected).detach()  # expect: GS301
    return losses, chosen_rewards, rejected_rewards


def preference_stats(chosen_rewards: torch.Tensor, rejected_rewards: torch.Tensor) -> dict[str, torch.Tensor]:
    margins = chosen_rewards - rejected_rewards
    correct = margins > 0
    stats = {
        "rewards/chosen": chosen_rewards.mean(),
        "rewards/rejected": rejected_rewards.mean(),
        "rewards/margins": margins.mean(),
        "rewards/accuracy": correct.float().mean(),
        "rewards/correct_margin": margins[correct].mean() if correct.any() else margins.new_zeros(()),  # expect: GS108, GS201
    }
    if not correct.any():  # expect: GS201
        logger.warning("no preference pair ranked correctly in this batch")  # expect: GS501
    return stats
