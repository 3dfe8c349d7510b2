"""Entry point for the corpus runner: a few video diffusion updates on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import random  # noqa: E402

import torch  # noqa: E402

from config import VideoDiffusionConfig  # noqa: E402
from data import MovingBlobs  # noqa: E402
from trainer import VideoDiffusionTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    cfg = VideoDiffusionConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = VideoDiffusionTrainer(cfg, device)
    data = MovingBlobs(cfg, seed)
    if device.type == "cuda":
        video, captions = data.batch()
        trainer.capture(video.to(device), [c.to(device) for c in captions])
    losses = []
    for _ in range(steps):
        video, captions = data.batch()
        loss = trainer.fit_batch(video.to(device), [c.to(device) for c in captions])
        losses.append(float(loss))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "num_updates": float(trainer.num_updates),
        "snr_mean": float(trainer.stats.get("snr_mean", 0.0)),
        "t_coverage": float(trainer.t_coverage.sum()),
        "previews": float(len(trainer.sampler.grids)),
        "ema_param_sum": float(sum(p.sum() for p in trainer.ema.parameters())),
        "param_sum": float(sum(p.sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
