"""A toy vectorised environment and GAE, all on the CPU and outside any captured region."""

from __future__ import annotations

import torch


class GridEnv:
    """Walk on a ring of `size` cells towards a goal; action 3 is illegal on even cells."""

    def __init__(self, n_envs: int, size: int = 8, seed: int = 0):
        self.n_envs, self.size = n_envs, size
        self.gen = torch.Generator().manual_seed(seed)
        self.pos = torch.randint(0, size, (n_envs,), generator=self.gen)
        self.goal = torch.randint(0, size, (n_envs,), generator=self.gen)
        self.t = torch.zeros(n_envs, dtype=torch.long)

    def obs(self) -> torch.Tensor:
        angle = 2 * torch.pi * torch.stack([self.pos, self.goal], 1).float() / self.size
        return torch.cat([angle.sin(), angle.cos(), (self.t.float() / 32)[:, None], torch.ones(self.n_envs, 1)], 1)

    def action_mask(self) -> torch.Tensor:
        mask = torch.ones(self.n_envs, 4, dtype=torch.bool)
        mask[:, 3] = self.pos % 2 == 1
        return mask

    def step(self, actions: torch.Tensor):
        move = torch.tensor([-1, 1, 0, 2])[actions]
        self.pos = (self.pos + move) % self.size
        self.t += 1
        reached = self.pos == self.goal
        reward = reached.float() - 0.01
        done = reached | (self.t >= 32)
        if done.any():  # CPU tensors, eager loop: fine
            n = int(done.sum())
            self.pos[done] = torch.randint(0, self.size, (n,), generator=self.gen)
            self.goal[done] = torch.randint(0, self.size, (n,), generator=self.gen)
            self.t[done] = 0
        return reward, done


def compute_gae(rewards, values, dones, last_value, gamma: float = 0.99, lam: float = 0.95):
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(last_value)
    for t in reversed(range(T)):
        next_value = last_value if t == T - 1 else values[t + 1]
        nonterminal = 1.0 - dones[t].float()
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]
        last = delta + gamma * lam * nonterminal * last
        adv[t] = last
    return adv, adv + values
