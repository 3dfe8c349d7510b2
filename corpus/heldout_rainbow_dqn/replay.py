"""Prioritized replay with n-step transitions and priorities kept on the device."""

from __future__ import annotations

import torch


class PrioritizedReplay:
    def __init__(self, cfg, device: torch.device):
        self.capacity = cfg.capacity
        self.obs = torch.zeros(cfg.capacity, cfg.obs_dim, device=device)
        self.actions = torch.zeros(cfg.capacity, dtype=torch.long, device=device)
        self.rewards = torch.zeros(cfg.capacity, cfg.n_step, device=device)
        self.next_obs = torch.zeros(cfg.capacity, cfg.obs_dim, device=device)
        self.dones = torch.zeros(cfg.capacity, device=device)
        self.priorities = torch.zeros(cfg.capacity, device=device)
        self.max_priority = 1.0
        self.size = 0
        self.pos = 0

    def add(self, obs, action: int, rewards: list[float], next_obs, done: bool) -> None:
        self.obs[self.pos] = obs
        self.actions[self.pos] = action
        self.rewards[self.pos] = torch.as_tensor(rewards)
        self.next_obs[self.pos] = next_obs
        self.dones[self.pos] = float(done)
        self.priorities[self.pos] = self.max_priority
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def priority_probs(self, alpha: float) -> torch.Tensor:
        p = self.priorities[: self.size] ** alpha  # expect: GS301
        return p / p.sum()

    def gather(self, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.obs[idx], self.actions[idx], self.rewards[idx], self.next_obs[idx], self.dones[idx]

    def update_priorities(self, idx: torch.Tensor, priorities: torch.Tensor) -> None:
        self.priorities[idx] = priorities
