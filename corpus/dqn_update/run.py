"""Entry point for the corpus runner: fill the replay and run a few Rainbow updates on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from agent import RainbowAgent  # noqa: E402
from config import RainbowConfig  # noqa: E402
from env import Chain  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = RainbowConfig(seed=seed)
    agent = RainbowAgent(cfg, torch.device("cpu"))
    env = Chain(cfg.obs_dim, cfg.n_actions, seed)
    rng = random.Random(seed)
    obs = env.reset()
    total_reward = 0.0
    for t in range(cfg.batch_size * 3):
        agent.epsilon = max(cfg.eps_end, cfg.eps_start - t / cfg.eps_decay_steps)
        action = agent.act(obs)
        next_obs, reward, done = env.step(action)
        agent.replay.add(obs, action, reward, next_obs, done)
        total_reward += reward
        obs = env.reset() if done else next_obs
    losses: dict = {}
    values = [agent.train_on(agent.replay.sample(cfg.batch_size, rng), it, losses) for it in range(steps)]
    return {
        "last_loss": float(values[-1]),
        "loss_sum": float(sum(values)),
        "total_reward": float(total_reward),
        "updates": float(agent.updates),
        "beta": float(agent.beta),
        "max_priority": float(agent.replay.max_priority),
        "tree_total": float(agent.replay.tree.total),
        "online_sum": float(sum(p.detach().sum() for p in agent.online.parameters())),
        "target_sum": float(sum(p.detach().sum() for p in agent.target.parameters())),
        "q_mean": float(agent.metrics.last("q_mean")),
    }


if __name__ == "__main__":
    print(run())
