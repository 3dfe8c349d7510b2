"""Entry point for the corpus runner: a few Dreamer updates on replayed sequences, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from agent import DreamerAgent  # noqa: E402
from config import DreamerConfig  # noqa: E402
from replay import SequenceReplay  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = DreamerConfig(seed=seed)
    device = torch.device("cpu")
    agent = DreamerAgent(cfg, device)
    replay = SequenceReplay(cfg, episodes=8, length=20, seed=seed)
    losses = agent.fit(replay, steps)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "ent_coef": float(agent.ent_coef),
        "updates": float(agent.updates),
        "ret_low": float(agent.ret_norm.low),
        "ret_high": float(agent.ret_norm.high),
        "episodes_logged": float(len(agent.episode_returns)),
        "actor_param_sum": float(sum(p.detach().sum() for p in agent.actor.parameters())),
        "slow_critic_sum": float(sum(p.sum() for p in agent.slow_critic.parameters())),
    }


if __name__ == "__main__":
    print(run())
