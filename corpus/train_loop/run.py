"""Entry point for the corpus runner: train a few steps on CPU and return the final numbers."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from train import TrainConfig, train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    trainer = train(TrainConfig(), steps=steps, seed=seed, device=torch.device("cpu"))
    return {
        "final_loss": float(trainer.last_loss),
        "final_acc": float(trainer.last_acc),
        "param_norm": trainer.model.param_norm(),
        "loss_sum": float(sum(trainer.losses)),
        "steps": float(trainer.step),
    }


if __name__ == "__main__":
    print(run())
