"""Entry point for the corpus runner: a few two-tower training steps on synthetic rows, on CPU."""

from __future__ import annotations

import os
import random
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import RecConfig  # noqa: E402
from data import synthetic_rows  # noqa: E402
from trainer import RecTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    cfg = RecConfig(seed=seed)
    trainer = RecTrainer(cfg, torch.device("cpu"))
    rows = synthetic_rows(cfg, cfg.batch_size * steps, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        losses = trainer.fit(rows)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "running_loss": float(trainer.running_loss),
        "auc": float(trainer.auc()),
        "pos_rate": float(sum(trainer.pos_rates) / len(trainer.pos_rates)),
        "logit_temp": float(trainer.logit_temp),
        "batches": float(trainer.num_batches),
    }


if __name__ == "__main__":
    print(run())
