"""Entry point for the corpus runner: a few mean-teacher detection steps on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from trainer import MeanTeacherTrainer, TrainConfig  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    trainer = MeanTeacherTrainer(TrainConfig(), torch.device("cpu"))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*pin_memory.*")  # no accelerator on the CPU runner
        trainer.fit(steps=steps, seed=seed)
    teacher_norm = sum(p.pow(2).sum() for p in trainer.teacher.model.parameters()).sqrt()
    return {
        "last_loss": float(trainer.losses[-1]),
        "loss_sum": float(sum(float(v) for v in trainer.losses)),
        "giou": float(trainer.metrics["giou"]),
        "acc": float(trainer.metrics["acc"]),
        "pseudo_kept": float(trainer.metrics["pseudo_kept"]),
        "teacher_norm": float(teacher_norm),
        "ema_updates": float(trainer.teacher.updates),
    }


if __name__ == "__main__":
    print(run())
