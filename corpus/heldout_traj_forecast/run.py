"""Entry point for the corpus runner: a few forecasting updates and minADE/minFDE, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import ForecastConfig  # noqa: E402
from scenes import scene_batches  # noqa: E402
from trainer import ForecastTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = ForecastConfig(seed=seed)
    device = torch.device("cpu")
    with tempfile.TemporaryDirectory() as log_dir:
        trainer = ForecastTrainer(cfg, device, log_dir, steps)
        losses = trainer.fit(scene_batches(cfg, seed), steps)
        metrics = trainer.evaluate(scene_batches(cfg, seed + 100), 2)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "train_minADE": float(trainer.metrics["minADE"]),
        "train_minFDE": float(trainer.metrics["minFDE"]),
        "eval_minADE": float(metrics["minADE"]),
        "eval_minFDE": float(metrics["minFDE"]),
        "tf_ratio": float(trainer.tf_ratio),
        "scenes_seen": float(trainer.scenes_seen),
        "param_sum": float(sum(p.sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
