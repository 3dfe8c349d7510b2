"""Entry point for the corpus runner: a few ConvNeXt training steps on random images, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SwinConfig  # noqa: E402
from trainer import Trainer  # noqa: E402


def make_batches(cfg: SwinConfig, n: int, seed: int) -> list:
    g = torch.Generator().manual_seed(seed + 7)
    out = []
    for _ in range(n):
        x = torch.randn(cfg.batch_size, cfg.in_chans, cfg.image_size, cfg.image_size, generator=g)
        y = torch.randint(0, cfg.num_classes, (cfg.batch_size,), generator=g)
        y[0] = -1
        out.append((x, y))
    return out


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = SwinConfig(seed=seed)
    device = torch.device("cpu")
    trainer = Trainer(cfg, device)
    if device.type == "cuda":
        trainer.capture()
    mean_loss = trainer.fit(make_batches(cfg, steps, seed))
    return {
        "mean_loss": float(mean_loss),
        "last_loss": float(trainer.loss_log[-1]),
        "steps": float(trainer.step),
        "last_acc": float(trainer.metrics["train/acc"][-1]),
        "grad_norm": float(trainer.last_grad_norm),
        "lr_head": float(trainer.opt.param_groups[-1]["lr"]),
        "ema_param_sum": float(sum(p.sum() for p in trainer.ema.module.parameters())),
        "param_sum": float(sum(p.sum() for p in trainer.model.parameters())),
        "ema_updates": float(trainer.ema.updates),
    }


if __name__ == "__main__":
    print(run())
