"""Entry point for the corpus runner: a few DPO updates on synthetic preference pairs, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DPOConfig  # noqa: E402
from data import make_pairs  # noqa: E402
from trainer import DPOTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = DPOConfig()
    trainer = DPOTrainer(cfg, torch.device("cpu"), total_steps=steps)
    losses = trainer.fit(make_pairs(cfg, steps, seed))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(float(x) for x in losses)),
        "margin_mean": float(sum(trainer.margin_history) / len(trainer.margin_history)),
        "beta": float(trainer.beta),
        "updates": float(trainer.num_updates),
        "head_norm": float(trainer.policy.lm_head.weight.detach().norm()),
    }


if __name__ == "__main__":
    print(run())
