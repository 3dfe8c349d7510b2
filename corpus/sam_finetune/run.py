"""Entry point for the corpus runner: a few SAM-style fine-tuning steps, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SamConfig  # noqa: E402
from data import make_batch  # noqa: E402
from trainer import SamFinetuner  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = SamConfig(seed=seed)
    device = torch.device("cpu")
    g = torch.Generator().manual_seed(seed + 1)
    with tempfile.TemporaryDirectory() as tmp:
        tuner = SamFinetuner(cfg, device, tmp)
        history: dict = {}
        losses = []
        for it in range(steps):
            images, masks = make_batch(cfg.batch_size, cfg.image_size, g)
            losses.append(tuner.fit_batch(images, masks, history, it))
            tuner.focal_weight = cfg.focal_weight * (0.9 ** (it + 1))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "loss_ema": float(tuner.loss_ema.item()),
        "updates": float(tuner.updates),
        "iou_mean": float(tuner.iou_history.mean().item()),
        "decoder_param_sum": float(sum(p.sum() for p in tuner.decoder.parameters()).item()),
    }


if __name__ == "__main__":
    print(run())
