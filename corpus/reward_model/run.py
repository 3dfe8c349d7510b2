"""Entry point for the corpus runner: a few reward-model updates on synthetic preference pairs, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import RMConfig  # noqa: E402
from data import make_pairs  # noqa: E402
from trainer import RewardTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = RMConfig(seed=seed)
    trainer = RewardTrainer(cfg, torch.device("cpu"))
    gen = torch.Generator().manual_seed(seed + 1)
    batches = make_pairs(cfg, steps, gen)
    losses = trainer.fit(batches)
    ev = trainer.evaluate(make_pairs(cfg, 1, gen)[0])
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "eval_accuracy": float(ev["eval_accuracy"]),
        "eval_margin": float(ev["eval_margin"]),
        "reward_ema": float(trainer.reward_ema),
        "margin_trace_len": float(trainer.margin_trace.numel()),
        "updates": float(trainer.updates),
        "center_coef": float(trainer.center_coef),
    }


if __name__ == "__main__":
    print(run())
