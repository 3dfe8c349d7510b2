"""A uniform replay buffer kept in host memory."""

from __future__ import annotations

import random

import torch


class ReplayBuffer:
    def __init__(self, capacity: int, obs_dim: int, act_dim: int, device: torch.device):
        self.capacity = capacity
        self.device = device
        self.obs = torch.zeros(capacity, obs_dim)
        self.next_obs = torch.zeros(capacity, obs_dim)
        self.actions = torch.zeros(capacity, act_dim)
        self.rewards = torch.zeros(capacity)
        self.dones = torch.zeros(capacity)
        self.ptr = 0
        self.size = 0

    def add(self, obs: torch.Tensor, act: torch.Tensor, rew: float, next_obs: torch.Tensor, done: bool) -> None:
        self.obs[self.ptr] = obs
        self.actions[self.ptr] = act
        self.rewards[self.ptr] = rew
        self.next_obs[self.ptr] = next_obs
        self.dones[self.ptr] = float(done)
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        idx = random.sample(range(self.size), batch_size)  # expect: GS502
        idx_t = torch.as_tensor(idx, dtype=torch.long)  # expect: GS402
        batch = {"obs": self.obs[idx_t], "actions": self.actions[idx_t], "rewards": self.rewards[idx_t], "next_obs": self.next_obs[idx_t], "dones": self.dones[idx_t]}
        if self.device.type == "cuda":
            batch = {k: v.pin_memory() for k, v in batch.items()}  # expect: GS406
        return {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}  # expect: GS402
