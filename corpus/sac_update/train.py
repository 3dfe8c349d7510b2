"""Off-policy training loop on a toy point-mass environment."""

from __future__ import annotations

import torch

from agent import SACAgent
from config import SACConfig
from replay import ReplayBuffer


class PointMass:
    """Move a point towards the origin; reward is the negative distance."""

    def __init__(self, cfg: SACConfig, seed: int):
        self.cfg = cfg
        self.g = torch.Generator().manual_seed(seed)
        self.state = torch.zeros(cfg.obs_dim)
        self.t = 0

    def reset(self) -> torch.Tensor:
        self.state = torch.rand(self.cfg.obs_dim, generator=self.g) * 2 - 1
        self.t = 0
        return self.state.clone()

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, float, bool]:
        self.state[: self.cfg.act_dim] += 0.1 * action
        self.t += 1
        reward = -float(self.state.norm())
        return self.state.clone(), reward, self.t >= 20


def train(cfg: SACConfig, updates: int, seed: int, device: torch.device) -> SACAgent:
    torch.manual_seed(seed)
    import random

    random.seed(seed)
    env = PointMass(cfg, seed)
    replay = ReplayBuffer(cfg.buffer_size, cfg.obs_dim, cfg.act_dim, device)
    agent = SACAgent(cfg, replay, device)
    obs = env.reset()
    total_steps = cfg.learning_starts + updates
    for global_step in range(total_steps):
        if global_step < cfg.learning_starts:
            action = torch.rand(cfg.act_dim) * 2 - 1
        else:
            action = agent.act(obs)
        next_obs, reward, done = env.step(action)
        replay.add(obs, action, reward, next_obs, done)
        obs = env.reset() if done else next_obs
        if global_step < cfg.learning_starts:
            continue
        if device.type == "cuda" and agent.graph is None:
            agent.capture(global_step)
        if agent.graph is not None:
            agent.graph.replay()
        else:
            agent.update(global_step)
    return agent
