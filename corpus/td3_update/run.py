"""Entry point for the corpus runner: collect transitions and run a few TD3 updates, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from agent import TD3Agent  # noqa: E402
from buffer import ReplayBuffer  # noqa: E402
from config import TD3Config  # noqa: E402
from env import PointChase  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = TD3Config(seed=seed)
    device = torch.device("cpu")
    agent = TD3Agent(cfg, device)
    env = PointChase(cfg.obs_dim, cfg.act_dim, seed)
    buf = ReplayBuffer(cfg.obs_dim, cfg.act_dim, cfg.buffer_size)
    g = torch.Generator().manual_seed(seed + 1)
    obs = env.reset()
    for _ in range(cfg.batch_size * 2):
        action = agent.act(obs, explore=True, generator=g)
        next_obs, reward, done = env.step(action)
        buf.add(obs, action, reward, next_obs, done)
        obs = env.reset() if done else next_obs
    history: dict = {}
    losses = [agent.train_on(buf.sample(cfg.batch_size, g), it, history) for it in range(steps * 2)]
    return {
        "last_critic_loss": float(losses[-1]),
        "critic_loss_sum": float(sum(losses)),
        "q_max": float(agent.stats["q_max"][-1]),
        "policy_noise": float(agent.policy_noise),
        "total_it": float(agent.total_it),
        "actor_param_sum": float(sum(p.sum() for p in agent.actor.parameters())),
        "target_param_sum": float(sum(p.sum() for p in agent.critic_target.parameters())),
        "done_in_batches": float(agent.done_in_batches),
    }


if __name__ == "__main__":
    print(run())
