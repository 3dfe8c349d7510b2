"""Entry point for the corpus runner: a few mixup training steps on CPU, return the logged numbers."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from train import TrainConfig, train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    trainer, history = train(TrainConfig(), steps=steps, seed=seed, device=torch.device("cpu"))
    last = history[-1]
    return {
        "final_loss": float(last["loss"]),
        "final_grad_norm": float(last["grad_norm"]),
        "loss_sum": float(sum(h["loss"] for h in history)),
        "param_norm": float(sum(p.detach().pow(2).sum() for p in trainer.model.parameters()).sqrt()),
        "scale": float(last["scale"]),
        "loss_ema": float(trainer.loss_ema),
        "updates": float(trainer.num_updates),
    }


if __name__ == "__main__":
    print(run())
