"""Entry point for the corpus runner."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from train import train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    agent, stats = train(steps, seed, torch.device("cpu"))
    return {
        "loss": stats["loss"],
        "return": stats["return"],
        "param_norm": float(torch.sqrt(sum(p.detach().pow(2).sum() for p in agent.net.parameters()))),
        "obs_mean": float(agent.net.norm.mean.sum()),
        "obs_var": float(agent.net.norm.var.sum()),
        "total_steps": float(agent.total_steps),
        "epsilon": agent.epsilon,
    }


if __name__ == "__main__":
    print(run())
