"""Entry point for the corpus runner: a few GNN graph-classification steps on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import GNNConfig  # noqa: E402
from sampler import NeighbourSampler  # noqa: E402
from train import GNNTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = GNNConfig()
    trainer = GNNTrainer(cfg, torch.device("cpu"))
    losses = trainer.fit(NeighbourSampler(cfg, seed), iterations=steps)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(float(v) for v in losses)),
        "acc_mean": float(trainer.tracker.mean("acc")),
        "steps": float(trainer.tracker.total_steps),
        "running_deg": float(trainer.model.convs[0].running_deg),
        "lr": float(trainer.current_lr),
    }


if __name__ == "__main__":
    print(run())
