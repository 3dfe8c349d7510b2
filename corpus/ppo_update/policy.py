"""Actor-critic network for discrete actions with observation normalisation, legal-action masks
and optional activation checkpointing of the shared trunk."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class RunningMeanStd(nn.Module):
    """Observation statistics, updated from rollouts (eagerly, outside any graph)."""

    def __init__(self, dim: int, clip: float = 5.0, eps: float = 1e-8):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.count = 1e-4
        self.clip = clip
        self.eps = eps

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        b_mean, b_var, n = batch.mean(0), batch.var(0, unbiased=False), batch.shape[0]
        delta = b_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        self.var.copy_((self.var * self.count + b_var * n + delta**2 * self.count * n / total) / total)
        self.count = total

    def normalize(self, obs: torch.Tensor) -> torch.Tensor:
        return ((obs - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)


class ActorCritic(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64, grad_checkpoint: bool = False):
        super().__init__()
        self.grad_checkpoint = grad_checkpoint
        self.obs_norm = RunningMeanStd(obs_dim)
        self.trunk = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor, action_mask: torch.Tensor | None = None):
        if obs.dim() == 1:
            obs = obs[None]
        obs = self.obs_norm.normalize(obs)
        if self.grad_checkpoint and self.training:
            h = checkpoint(self.trunk, obs, use_reentrant=False)  # expect: GS603
        else:
            h = self.trunk(obs)
        logits = self.pi(h)
        if action_mask is not None:
            assert action_mask.any(dim=-1).all(), "a state with no legal action"  # expect: GS201
            logits = logits.masked_fill(~action_mask, -1e9)
        return logits, self.v(h).squeeze(-1)
