"""Lambda-returns, balanced KL with free nats, and percentile return normalisation."""

from __future__ import annotations

import torch
import torch.nn as nn


def gaussian_kl(m1, s1, m2, s2) -> torch.Tensor:
    return (torch.log(s2 / s1) + (s1.pow(2) + (m1 - m2).pow(2)) / (2 * s2.pow(2)) - 0.5).sum(-1)


def kl_balanced(post, prior, balance: float, free_nats: float) -> tuple[torch.Tensor, torch.Tensor]:
    lhs = gaussian_kl(post.mean.detach(), post.std.detach(), prior.mean, prior.std).mean()
    rhs = gaussian_kl(post.mean, post.std, prior.mean.detach(), prior.std.detach()).mean()
    value = gaussian_kl(post.mean, post.std, prior.mean, prior.std).mean().detach()
    loss = balance * lhs + (1.0 - balance) * rhs
    if loss < free_nats:  # expect: GS201
        loss = loss * 0.0
    return loss, value


def lambda_returns(rewards, values, continues, discount: float, lam: float) -> torch.Tensor:
    """rewards/continues: (H, N); values: (H + 1, N). Returns (H, N)."""
    horizon = rewards.shape[0]
    last = values[-1]
    out = []
    for t in reversed(range(horizon)):
        last = rewards[t] + discount * continues[t] * ((1.0 - lam) * values[t + 1] + lam * last)
        out.append(last)
    return torch.stack(out[::-1])


class ReturnNormalizer(nn.Module):
    def __init__(self, low: float, high: float, decay: float):
        super().__init__()
        self.q_low, self.q_high, self.decay = low, high, decay
        self.register_buffer("low", torch.zeros(()))
        self.register_buffer("high", torch.ones(()))
        self.samples_seen = 0

    def update(self, returns: torch.Tensor) -> None:
        flat = returns.detach().flatten()
        flat = flat[torch.isfinite(flat)]  # expect: GS108
        lo = torch.quantile(flat, self.q_low)
        hi = torch.quantile(flat, self.q_high)
        self.low = self.decay * self.low + (1.0 - self.decay) * lo  # expect: GS401
        self.high.mul_(self.decay).add_((1.0 - self.decay) * hi)
        self.samples_seen += returns.numel()  # expect: GS302

    @property
    def scale(self) -> torch.Tensor:
        return torch.clamp(self.high - self.low, min=1.0)
