"""Entry point for the corpus runner: a few WGAN-GP steps on CPU, return the logged numbers."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from gan import GANConfig, train  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    trainer = train(GANConfig(), steps=steps, seed=seed, device=torch.device("cpu"))
    last = trainer.history[-1]
    ema_norm = sum(p.detach().pow(2).sum() for p in trainer.G_ema.parameters()).sqrt()
    return {
        "d_loss": float(trainer.last_d_loss),
        "gp": float(last["gp"]),
        "wasserstein": float(last["wasserstein"]),
        "g_loss_sum": float(sum(h["g_loss"] for h in trainer.history)),
        "ema_norm": float(ema_norm),
        "steps": float(trainer.step),
    }


if __name__ == "__main__":
    print(run())
