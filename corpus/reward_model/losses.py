import torch
import torch.nn.functional as F


def bradley_terry_loss(r_chosen: torch.Tensor, r_rejected: torch.Tensor, strength: torch.Tensor,
                       margin_scale: float) -> torch.Tensor:
    margin = strength * margin_scale
    return -F.logsigmoid(r_chosen - r_rejected - margin).mean()


def centering_term(r_chosen: torch.Tensor, r_rejected: torch.Tensor) -> torch.Tensor:
    return (r_chosen + r_rejected).pow(2).mean()


def preference_summary(r_chosen: torch.Tensor, r_rejected: torch.Tensor) -> tuple[float, float]:
    diff = r_chosen - r_rejected
    accuracy = (diff > 0).float().mean().item()  # expect: GS101
    mean_margin = float(diff.mean())  # expect: GS105
    return accuracy, mean_margin


def count_ties(strength: torch.Tensor) -> torch.Tensor:
    tie_idx = torch.nonzero(strength == 0)  # expect: GS107
    return tie_idx.shape[0] * torch.ones(())


def clip_rewards(rewards: torch.Tensor, limit: float) -> torch.Tensor:
    while rewards.abs().max() > limit:  # expect: GS201
        rewards = rewards * 0.5
    return rewards


def strength_scale(strength: torch.Tensor) -> float:
    return 2.0 if (strength > 1).any() else 1.0  # expect: GS201
