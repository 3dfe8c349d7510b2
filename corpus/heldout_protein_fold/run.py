"""Entry point for the corpus runner: a few structure-model training steps on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import TrainConfig  # noqa: E402
from data import make_batch  # noqa: E402
from trainer import FoldTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = TrainConfig(seed=seed)
    device = torch.device("cpu")
    trainer = FoldTrainer(cfg, device)
    gen = torch.Generator().manual_seed(seed + 7)
    batches = [make_batch(cfg.model, gen) for _ in range(steps)]
    losses = trainer.fit(batches)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "mean_plddt": float(trainer.monitor.summary()),
        "step_count": float(trainer.step_count),
        "recycle_count": float(trainer.model.recycle_count),
        "ema_param_sum": float(sum(p.sum() for p in trainer.ema_model.parameters())),
        "prev_pair_norm": float(trainer.model.prev_pair.norm()),
    }


if __name__ == "__main__":
    print(run())
