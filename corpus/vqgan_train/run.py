"""Entry point for the corpus runner: a few VQGAN steps on synthetic images, on CPU."""

from __future__ import annotations

import os
import random
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import VQGANConfig  # noqa: E402
from trainer import VQGANTrainer  # noqa: E402


def synthetic_images(n: int, size: int, generator: torch.Generator) -> torch.Tensor:
    coords = torch.linspace(-1.0, 1.0, size)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    phase = torch.rand(n, 3, 1, 1, generator=generator) * 3.0
    return torch.sin(3.0 * xx[None, None] + phase) * torch.cos(2.0 * yy[None, None] - phase)


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = VQGANConfig(seed=seed)
    device = torch.device("cpu")
    trainer = VQGANTrainer(cfg, device)
    g = torch.Generator().manual_seed(seed + 1)
    data = synthetic_images(cfg.dataset_size, cfg.resolution, g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = trainer.make_loader(data, g)
        losses = []
        while len(losses) < steps:
            for (images,) in loader:
                losses.append(trainer.fit_step(images))
                if len(losses) == steps:
                    break
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "rec_loss": trainer.metrics.last("train/rec_loss"),
        "perplexity": trainer.metrics.last("train/perplexity"),
        "d_loss": trainer.metrics.last("train/d_loss"),
        "restarts": float(trainer.quantizer.restarts),
        "codebook_sum": float(trainer.quantizer.embedding.weight.detach().sum()),
        "disc_param_sum": float(sum(p.detach().sum() for p in trainer.disc.parameters())),
        "global_step": float(trainer.global_step),
    }


if __name__ == "__main__":
    print(run())
