"""Prioritized n-step replay memory (host side)."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass

import torch

from sumtree import SumTree


@dataclass
class Batch:
    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    dones: torch.Tensor
    probs: torch.Tensor
    indices: torch.Tensor


class PrioritizedReplay:
    def __init__(self, capacity: int, obs_dim: int, n_step: int, alpha: float):
        self.capacity = capacity
        self.alpha = alpha
        self.n_step = n_step
        self.tree = SumTree(capacity)
        self.obs = torch.zeros(capacity, obs_dim)
        self.next_obs = torch.zeros(capacity, obs_dim)
        self.actions = torch.zeros(capacity, dtype=torch.long)
        self.rewards = torch.zeros(capacity, n_step)
        self.dones = torch.zeros(capacity)
        self.pending: deque = deque(maxlen=n_step)
        self.max_priority = 1.0
        self.size = 0
        self.ptr = 0

    def add(self, obs, action: int, reward: float, next_obs, done: bool) -> None:
        self.pending.append((obs, action, reward))
        if len(self.pending) < self.n_step and not done:
            return
        first_obs, first_action, _ = self.pending[0]
        rewards = [r for _, _, r in self.pending] + [0.0] * (self.n_step - len(self.pending))
        self.obs[self.ptr] = first_obs
        self.actions[self.ptr] = first_action
        self.rewards[self.ptr] = torch.tensor(rewards)
        self.next_obs[self.ptr] = next_obs
        self.dones[self.ptr] = float(done)
        self.tree.set(self.ptr, self.max_priority ** self.alpha)
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        if done:
            self.pending.clear()

    def sample(self, k: int, rng: random.Random) -> Batch:
        idx = self.tree.sample(k, rng)
        probs = torch.tensor([self.tree.nodes[i + self.capacity] for i in idx]) / self.tree.total
        ix = torch.tensor(idx)
        return Batch(self.obs[ix], self.actions[ix], self.rewards[ix], self.next_obs[ix],
                     self.dones[ix], probs, ix)

    def update_priorities(self, indices: list[int], priorities: list[float]) -> None:
        for i, p in zip(indices, priorities):
            self.tree.set(i, p ** self.alpha)  # expect: GS503
            self.max_priority = max(self.max_priority, p)  # expect: GS302
