"""Episode buffer with 'future' hindsight goal relabelling, sampled on the host."""

from __future__ import annotations

import random

import torch


def goal_reward(achieved: torch.Tensor, goal: torch.Tensor, threshold: float) -> torch.Tensor:
    d = torch.linalg.vector_norm(achieved - goal, dim=-1)
    return -(d > threshold).float()


class HERBuffer:
    def __init__(self, cfg, seed: int):
        self.cfg = cfg
        self.rng = random.Random(seed)
        t, n = cfg.episode_len, cfg.buffer_episodes
        self.obs = torch.zeros(n, t + 1, cfg.obs_dim)
        self.ag = torch.zeros(n, t + 1, cfg.goal_dim)
        self.g = torch.zeros(n, t, cfg.goal_dim)
        self.actions = torch.zeros(n, t, cfg.act_dim)
        self.n_stored = 0
        self.future_p = 1.0 - 1.0 / (1.0 + cfg.replay_k)

    def store_episode(self, obs: torch.Tensor, ag: torch.Tensor, g: torch.Tensor, actions: torch.Tensor) -> None:
        i = self.n_stored % self.cfg.buffer_episodes
        self.obs[i], self.ag[i], self.g[i], self.actions[i] = obs, ag, g, actions
        self.n_stored += 1

    def sample(self, batch_size: int) -> dict[str, torch.Tensor]:
        t = self.cfg.episode_len
        n = min(self.n_stored, self.cfg.buffer_episodes)
        ep = [self.rng.randrange(n) for _ in range(batch_size)]
        ts = [self.rng.randrange(t) for _ in range(batch_size)]
        goals = self.g[ep, ts].clone()
        for b in range(batch_size):
            if self.rng.random() < self.future_p:
                future = ts[b] + 1 + self.rng.randrange(t - ts[b])
                goals[b] = self.ag[ep[b], future]
        ag_next = self.ag[ep, [s + 1 for s in ts]]
        reward = goal_reward(ag_next, goals, self.cfg.distance_threshold)
        self.last_success_rate = reward.mean().item() + 1.0
        return {
            "obs": self.obs[ep, ts],
            "obs_next": self.obs[ep, [s + 1 for s in ts]],
            "g": goals,
            "actions": self.actions[ep, ts],
            "r": reward.unsqueeze(-1),
        }
