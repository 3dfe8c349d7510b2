"""Entry point for the corpus runner: a few PPO iterations on the toy ring environment, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from ppo import PPOConfig, train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    learner, losses = train(PPOConfig(), iterations=steps, seed=seed, device=torch.device("cpu"))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "entropy": float(learner.stats["entropy"][-1]),
        "clipfrac": float(torch.stack(learner.stats["clipfrac"]).mean()),
        "ent_coef": float(learner.ent_coef),
        "updates": float(learner.num_updates),
        "obs_mean": float(learner.policy.obs_norm.mean.sum()),
    }


if __name__ == "__main__":
    print(run())
