"""Entry point for the corpus runner."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from train import train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    trainer, history, out = train(steps, seed, torch.device("cpu"))
    loss, grad_norm, acc, first_pad, doubled = out
    return {
        "final_loss": float(loss),
        "grad_norm": float(grad_norm),
        "acc": float(acc),
        "loss_sum": float(sum(history)),
        "param_norm": float(torch.sqrt(sum(p.detach().pow(2).sum() for p in trainer.model.parameters()))),
        "first_pad_sum": float(first_pad.sum()),
        "doubled_sum": float(doubled.sum()),
        "step_count": float(trainer.step_count),
    }


if __name__ == "__main__":
    print(run())
