"""Entry point for the corpus runner: a few MoCo v2 pre-training steps on random images, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import MoCoConfig  # noqa: E402
from trainer import MoCoTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = MoCoConfig(seed=seed)
    trainer = MoCoTrainer(cfg, torch.device("cpu"))
    gen = torch.Generator().manual_seed(seed)
    batches = [torch.randn(cfg.batch_size, cfg.channels, cfg.image_size, cfg.image_size, generator=gen)
               for _ in range(steps)]
    losses = trainer.fit(batches)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "acc1": float(trainer.meters["acc@1"].avg),
        "acc5": float(trainer.meters["acc@5"].avg),
        "queue_ptr": float(trainer.moco.queue.ptr),
        "momentum": float(trainer.momentum),
        "key_norm": float(sum(float(p.norm()) for p in trainer.moco.encoder_k.parameters())),
    }


if __name__ == "__main__":
    print(run())
