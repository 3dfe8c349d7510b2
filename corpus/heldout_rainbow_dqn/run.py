"""Entry point for the corpus runner: fill the replay and run a few Rainbow updates on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from agent import RainbowAgent  # noqa: E402
from config import RainbowConfig  # noqa: E402
from env import NStepBuilder, RandomWalk  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = RainbowConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    agent = RainbowAgent(cfg, device)
    env = RandomWalk(cfg.obs_dim, cfg.num_actions, seed)
    builder = NStepBuilder(cfg.n_step)
    obs = env.reset()
    for _ in range(cfg.warmup_transitions):
        action = agent.act(obs)
        next_obs, reward, done = env.step(action)
        item = builder.push(obs, action, reward, next_obs, done)
        if item is not None:
            agent.replay.add(*[x.to(device) if torch.is_tensor(x) else x for x in item])
        obs = env.reset() if done else next_obs
    if device.type == "cuda":
        agent.capture(obs[None].to(device))
    losses = [float(agent.train_on(it)) for it in range(steps * 2)]
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "num_updates": float(agent.num_updates),
        "beta": float(agent.beta),
        "max_priority": float(agent.max_priority),
        "prio_ema": float(agent.prio_ema),
        "episodes": float(len(agent.episodes.returns)),
        "mean_return": float(agent.episodes.mean_return),
        "param_sum": float(sum(p.detach().sum() for p in agent.online.parameters())),
    }


if __name__ == "__main__":
    print(run())
