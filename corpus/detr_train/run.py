"""Entry point for the corpus runner: a few DETR updates on synthetic boxes, on CPU."""

from __future__ import annotations

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DetrConfig  # noqa: E402
from data import synthetic_batches  # noqa: E402
from trainer import DetrTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    cfg = DetrConfig(seed=seed)
    trainer = DetrTrainer(cfg, torch.device("cpu"))
    try:
        gen = torch.Generator().manual_seed(seed + 1)
        batches = synthetic_batches(cfg, steps, gen)
        history = trainer.fit(batches, epochs=1)
        summary = trainer.ap.summarize()
    finally:
        shutil.rmtree(trainer.dump_dir, ignore_errors=True)
    return {
        "last_loss": float(history[-1]),
        "loss_sum": float(sum(history)),
        "mean_score": float(summary["mean_score"]),
        "n_gt": float(summary["n_gt"]),
        "iterations": float(trainer.iteration),
        "all_scores_len": float(trainer.ap.all_scores.numel()),
        "param_sum": float(sum(p.detach().sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
