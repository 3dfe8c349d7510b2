"""Entry point for the corpus runner: a few ViT training steps on synthetic images, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import TrainConfig  # noqa: E402
from data import synthetic_batches  # noqa: E402
from trainer import ViTTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    cfg = TrainConfig(seed=seed)
    trainer = ViTTrainer(cfg, torch.device("cpu"))
    losses = trainer.fit(synthetic_batches(cfg, steps, seed))
    ema_norm = sum(float(p.float().norm()) for p in trainer.ema.shadow.parameters())
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "accuracy": float(trainer.meter.accuracy),
        "top5": float(sum(trainer.meter.top5_hits) / max(len(trainer.meter.top5_hits), 1)),
        "ema_norm": float(ema_norm),
        "steps": float(trainer.global_step),
        "lr_last": float(trainer.opt.param_groups[0]["lr"]),
    }


if __name__ == "__main__":
    print(run())
