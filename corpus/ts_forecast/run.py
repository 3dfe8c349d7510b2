"""Entry point for the corpus runner: a few forecaster training steps on synthetic series, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import ForecastConfig  # noqa: E402
from data import WindowSampler  # noqa: E402
from trainer import ForecastTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    cfg = ForecastConfig(seed=seed)
    device = torch.device("cpu")
    trainer = ForecastTrainer(cfg, device)
    train = WindowSampler(cfg, n_series=16, length=64, seed=seed)
    val = WindowSampler(cfg, n_series=4, length=64, seed=seed + 100)
    losses = trainer.fit(train, val, steps)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "global_step": float(trainer.global_step),
        "mase_sum": float(trainer.running["mase"]),
        "smape_sum": float(trainer.running["smape"]),
        "best_val": float(trainer.early.best),
        "recent_rows": float(trainer.recent_preds.shape[0]),
        "noise_std": float(trainer.noise_std),
        "param_sum": float(sum(p.detach().sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
