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
    model, losses = train(steps, seed, torch.device("cpu"))
    return {
        "final_loss": losses[-1],
        "loss_sum": float(sum(losses)),
        "param_norm": float(torch.sqrt(sum(p.detach().pow(2).sum() for p in model.parameters()))),
        "overflow_events": float(sum(b.moe.overflow_events for b in model.blocks)),
    }


if __name__ == "__main__":
    print(run())
