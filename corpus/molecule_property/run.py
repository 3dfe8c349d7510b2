"""Entry point for the corpus runner: a few graph-transformer training steps, on CPU."""

from __future__ import annotations

import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import MolConfig  # noqa: E402
from data import random_molecules  # noqa: E402
from trainer import PropertyTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = MolConfig(seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = PropertyTrainer(cfg, torch.device("cpu"), tmp)
        losses = [trainer.fit(random_molecules(cfg.batch_size, cfg, g)) for _ in range(steps)]
        report = trainer.epoch_report(random_molecules(cfg.batch_size, cfg, g))
    out = {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "num_updates": float(trainer.num_updates),
        "seen": float(trainer.seen),
        "running_mean_sum": float(trainer.running_mean.sum().item()),
        "ema_param_sum": float(sum(p.sum() for p in trainer.ema.module.parameters()).item()),
    }
    out.update(report)
    return out


if __name__ == "__main__":
    print(run())
