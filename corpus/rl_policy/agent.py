"""Actor-critic agent. `act` (policy forward + exploration + bookkeeping) is compiled with
mode="reduce-overhead" (CUDA graphs) on a GPU; the update runs eagerly."""

from __future__ import annotations

import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical


class RunningNorm(nn.Module):
    """Running mean/variance of observations, updated on every forward in training mode."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.count = 1e-4

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            n = x.shape[0]
            batch_mean, batch_var = x.mean(dim=0), x.var(dim=0, unbiased=False)
            delta = batch_mean - self.mean
            total = self.count + n
            self.mean += delta * n / total  # expect: GS301
            self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total  # expect: GS301, GS401
            self.count = total  # expect: GS302
        return (x - self.mean) / (self.var + 1e-8).sqrt()


class ActorCritic(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 32):
        super().__init__()
        self.norm = RunningNorm(obs_dim)
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor):
        h = self.body(self.norm(obs))
        return self.pi(h), self.v(h).squeeze(-1)


class Agent:
    def __init__(self, obs_dim: int, n_actions: int, device: torch.device, lr: float = 3e-3):
        self.device = device
        self.n_actions = n_actions
        self.net = ActorCritic(obs_dim, n_actions).to(device)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.epsilon = 0.2
        self.total_steps = 0
        self.rollout: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        use_graphs = device.type == "cuda"
        self.policy_step = torch.compile(self.act, mode="reduce-overhead") if use_graphs else self.act

    @torch.no_grad()
    def act(self, obs_list: list[list[float]]) -> torch.Tensor:
        obs = torch.as_tensor(obs_list, dtype=torch.float32, device=self.device)  # expect: GS402
        logits, value = self.net(obs)
        if random.random() < self.epsilon:  # expect: GS502
            action = torch.randint(0, self.n_actions, (obs.shape[0],), device=self.device)
        else:
            action = Categorical(logits=logits).sample()  # expect: GS111
        self.rollout.append((obs, action, value))  # expect: GS503
        self.total_steps += obs.shape[0]  # expect: GS302
        return action.cpu()  # expect: GS103

    def update(self, rewards: list[list[float]], dones: list[list[bool]], gamma: float = 0.95) -> dict[str, float]:
        """A2C update over the collected rollout (eager, outside any region)."""
        obs = torch.stack([o for o, _, _ in self.rollout])
        actions = torch.stack([a for _, a, _ in self.rollout])
        r = torch.tensor(rewards, device=self.device)
        d = torch.tensor(dones, dtype=torch.float32, device=self.device)
        returns = torch.zeros_like(r)
        running = torch.zeros(r.shape[1], device=self.device)
        for t in reversed(range(r.shape[0])):
            running = r[t] + gamma * running * (1.0 - d[t])
            returns[t] = running
        self.net.train(False)  # the normaliser is frozen during the update
        logits, values = self.net(obs.flatten(0, 1))
        self.net.train(True)
        logp = F.log_softmax(logits, dim=-1).gather(-1, actions.flatten()[:, None]).squeeze(-1)
        adv = returns.flatten() - values.detach()
        loss = -(logp * adv).mean() + 0.5 * F.mse_loss(values, returns.flatten())
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.rollout.clear()
        self.epsilon = max(0.02, self.epsilon * 0.9)
        return {"loss": loss.item(), "return": returns[0].mean().item()}
