"""Entry point for the corpus runner: a few SAC updates on a toy point-mass task, on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SACConfig  # noqa: E402
from train import train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = train(SACConfig(), updates=steps, seed=seed, device=torch.device("cpu"))
    m = agent.metrics
    return {
        "qf_loss": float(m["qf_loss"][-1]),
        "actor_loss": float(m["actor_loss"][-1]),
        "q_mean": float(torch.stack(m["q_mean"]).mean()),
        "log_alpha": float(agent.log_alpha.detach()),
        "reward_var": float(agent.reward_var),
        "updates": float(agent.num_updates),
        "target_norm": float(sum(p.detach().norm() for p in agent.qf1_target.parameters())),
    }


if __name__ == "__main__":
    print(run())
