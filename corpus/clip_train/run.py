"""Entry point for the corpus runner: a few accumulated CLIP steps on CPU, return the logged numbers."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from train import ClipConfig, train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    trainer = train(ClipConfig(), steps=steps, seed=seed, device=torch.device("cpu"))
    last = trainer.tracker.rows[-1]
    return {
        "loss": float(trainer.last_loss),
        "temperature": float(last["temperature"]),
        "i2t_mean": float(sum(trainer.history) / len(trainer.history)),
        "t2i": float(last["t2i"]),
        "logit_scale": float(trainer.logit_scale.detach()),
        "micro_steps": float(trainer.micro_step),
    }


if __name__ == "__main__":
    print(run())
