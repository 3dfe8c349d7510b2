"""Collect rollouts with the compiled policy step, update eagerly."""

from __future__ import annotations

import random

import torch

from agent import Agent
from env import CorridorEnv


def train(iterations: int, seed: int, device: torch.device, n_envs: int = 4, horizon: int = 6):
    random.seed(seed)
    torch.manual_seed(seed)
    env = CorridorEnv(n_envs, seed=seed)
    obs = env.reset()
    agent = Agent(obs_dim=len(obs[0]), n_actions=2, device=device)
    stats: dict[str, float] = {}
    for _ in range(iterations):
        rewards, dones = [], []
        for _ in range(horizon):
            actions = agent.policy_step(obs)
            obs, r, d = env.step(actions.tolist())
            rewards.append(r)
            dones.append(d)
        stats = agent.update(rewards, dones)
    return agent, stats


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    agent, stats = train(20, 0, dev)
    print(stats)
