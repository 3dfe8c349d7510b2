"""Entry point for the corpus runner: a few DINO steps on synthetic images, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DINOConfig  # noqa: E402
from data import MultiCropAugment, synthetic_images  # noqa: E402
from trainer import DINOTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = DINOConfig(seed=seed)
    device = torch.device("cpu")
    trainer = DINOTrainer(cfg, device)
    augment = MultiCropAugment(cfg.global_crop, cfg.local_crop, cfg.local_crops_number, seed)
    g = torch.Generator().manual_seed(seed + 1)
    losses = []
    for it in range(steps):
        images = synthetic_images(cfg.batch_size, cfg.global_crop, g)
        losses.append(trainer.fit_step(augment(images), it))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "center_norm": float(trainer.dino_loss.center.norm()),
        "student_param_sum": float(sum(p.detach().sum() for p in trainer.student.parameters())),
        "teacher_param_sum": float(sum(p.sum() for p in trainer.teacher.parameters())),
        "global_step": float(trainer.global_step),
        "lr": float(trainer.optimizer.param_groups[0]["lr"]),
    }


if __name__ == "__main__":
    print(run())
