"""Double-Q n-step targets."""

from __future__ import annotations

import torch


def double_q_bootstrap(online: torch.nn.Module, target: torch.nn.Module, next_obs: torch.Tensor,
                       dones: torch.Tensor, gamma_n: float) -> torch.Tensor:
    with torch.no_grad():
        next_actions = online(next_obs).argmax(dim=-1, keepdim=True)
        next_q = target(next_obs).gather(1, next_actions).squeeze(1)
        return gamma_n * (1.0 - dones) * next_q
