"""Entry point for the corpus runner: a few class-conditional DDPM training steps on CPU."""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DiffusionConfig  # noqa: E402
from trainer import DDPMTrainer, make_batches  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = DiffusionConfig(seed=seed)
    trainer = DDPMTrainer(cfg, torch.device("cpu"))
    with contextlib.redirect_stdout(io.StringIO()):
        history = trainer.fit(make_batches(cfg, steps, seed))
    ema_norm = sum(float(p.norm()) for p in trainer.ema.shadow.parameters())
    return {
        "last_loss": float(history[-1]),
        "loss_sum": float(sum(history)),
        "loss_ema": float(trainer.loss_ema),
        "ema_norm": float(ema_norm),
        "global_step": float(trainer.global_step),
        "ema_updates": float(trainer.ema.num_updates),
    }


if __name__ == "__main__":
    print(run())
