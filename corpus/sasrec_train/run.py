"""Entry point for the corpus runner: a few SASRec steps on synthetic user histories, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import random  # noqa: E402

import torch  # noqa: E402

from config import SASRecConfig  # noqa: E402
from data import InteractionLog, sample_batch, sample_negatives  # noqa: E402
from trainer import SASRecTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = SASRecConfig(seed=seed)
    device = torch.device("cpu")
    trainer = SASRecTrainer(cfg, device)
    g = torch.Generator().manual_seed(seed + 1)
    log = InteractionLog(cfg.n_users, cfg.n_items, cfg.min_hist, cfg.max_hist, g)
    train, targets = log.split()
    ndcg, hr, loss = 0.0, 0.0, torch.zeros(())
    for epoch in range(steps):
        temperature = max(cfg.temp_floor, cfg.temperature * 0.9 ** epoch)
        batch = sample_batch(train, cfg.batch_size, g)
        loss = trainer.step_fn(batch, sample_negatives(batch, cfg.n_items, g), temperature)
        trainer.end_epoch(epoch)
        ndcg, hr = trainer.evaluate(train, targets)
        if trainer.stopper.update(ndcg):
            break
    return {
        "loss": float(loss.item()),
        "ndcg": float(ndcg),
        "hr": float(hr),
        "l2_weight": float(trainer.l2_weight),
        "steps": float(trainer.step_count),
        "recent_rows": float(trainer.recent_users.shape[0]),
    }


if __name__ == "__main__":
    print(run())
