"""Entry point for the corpus runner: a few epochs of point-cloud part segmentation, on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import random  # noqa: E402

import torch  # noqa: E402

from config import SegConfig  # noqa: E402
from data import ToyParts  # noqa: E402
from trainer import SegTrainer, make_loader  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = SegConfig(seed=seed)
    device = torch.device("cpu")
    dataset = ToyParts(2 * cfg.batch_size, cfg, seed)
    trainer = SegTrainer(cfg, dataset, device)
    losses: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = make_loader(dataset, cfg.batch_size, seed)
        trainer.fit(loader, steps, losses)
    bn = trainer.model.sa1.mlp[1]
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(float(x) for x in losses)),
        "miou": trainer.iou.miou(),
        "lr": float(trainer.lr),
        "bn_momentum": float(bn.momentum),
        "global_step": float(trainer.global_step),
        "trace_sum": float(trainer.loss_trace.sum()),
        "param_sum": float(sum(p.detach().sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
