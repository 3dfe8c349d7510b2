"""Entry point for the corpus runner: a few MLM pre-training steps on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import MLMConfig  # noqa: E402
from data import pack_documents, synthetic_documents  # noqa: E402
from trainer import MLMTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = MLMConfig(seed=seed)
    rows = pack_documents(synthetic_documents(40, cfg, seed), cfg)
    eval_rows = pack_documents(synthetic_documents(8, cfg, seed + 100), cfg)
    trainer = MLMTrainer(cfg, torch.device("cpu"))
    history: list = []
    out = trainer.fit(rows, eval_rows, steps * cfg.accum_steps, history)
    return {
        "last_loss": float(history[-1]),
        "eval_acc": float(out["eval_acc"]),
        "train_acc": float(out["train_acc"]),
        "micro_step": float(trainer.micro_step),
        "loss_scale": float(trainer.loss_scale),
        "grad_norm": float(trainer.stats["grad_norm"][-1]),
        "param_sum": float(sum(p.detach().sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
