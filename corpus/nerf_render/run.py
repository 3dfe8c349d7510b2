"""Entry point for the corpus runner: a few hierarchical NeRF training steps on a toy sphere, on CPU."""

from __future__ import annotations

import logging
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import NeRFConfig  # noqa: E402
from trainer import NeRFTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    logging.getLogger("nerf").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = NeRFTrainer(NeRFConfig(seed=seed), torch.device("cpu"))
        losses = trainer.fit(steps)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "psnr_ema": float(trainer.psnr_ema),
        "psnr_last": float(trainer.psnr_log[-1]),
        "lr": float(trainer.lr),
        "alpha": float(trainer.field_fine.alpha),
        "iters": float(trainer.it),
    }


if __name__ == "__main__":
    print(run())
