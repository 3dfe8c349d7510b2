"""Entry point for the corpus runner: a few FT-Transformer epochs on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import FTConfig  # noqa: E402
from data import make_table, weighted_batches  # noqa: E402
from trainer import FTTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    cfg = FTConfig(seed=seed)
    device = torch.device("cpu")
    x_num, x_cat, y = make_table(cfg, 256, seed)
    vx_num, vx_cat, vy = make_table(cfg, 128, seed + 1)
    gen = torch.Generator().manual_seed(seed + 2)
    batches, counts = weighted_batches(x_num, x_cat, y, cfg, steps, gen)
    trainer = FTTrainer(cfg, device, counts)
    metrics = {"auroc": 0.5, "accuracy": 0.0}
    train_loss = 0.0
    for _ in range(steps):
        train_loss = trainer.run_epoch(batches, gen)
        metrics = trainer.evaluate(vx_num, vx_cat, vy)
        if trainer.end_epoch(metrics, train_loss):
            break
    trainer.model.load_state_dict(trainer.best_state)
    best = trainer.evaluate(vx_num, vx_cat, vy)
    return {
        "train_loss": float(train_loss),
        "auroc": float(metrics["auroc"]),
        "accuracy": float(metrics["accuracy"]),
        "best_auroc": float(best["auroc"]),
        "global_step": float(trainer.global_step),
        "lr": float(trainer.opt.param_groups[0]["lr"]),
        "seen_ids": float(len(trainer.model.cat_tok.seen_ids)),
    }


if __name__ == "__main__":
    print(run())
