"""Entry point for the corpus runner: a few enhancement steps and a short evaluation, on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import EnhanceConfig  # noqa: E402
from data import SyntheticSpeech  # noqa: E402
from trainer import EnhanceTrainer, make_loader  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = EnhanceConfig(seed=seed)
    device = torch.device("cpu")
    dataset = SyntheticSpeech(16, cfg.seg_len, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = make_loader(dataset, cfg, seed)
        trainer = EnhanceTrainer(cfg, device)
        losses = trainer.fit(loader, steps)
    metrics = trainer.evaluate(dataset, 3)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "ema_loss": float(trainer.ema_loss),
        "si_snri": float(metrics["si_snri"]),
        "step_count": float(trainer.step_count),
        "mask_mean": float(trainer.last_mask_mean),
        "param_sum": float(sum(p.sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
