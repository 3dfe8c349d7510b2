"""Entry point for the corpus runner: a short QAT fine-tuning run on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import QATConfig  # noqa: E402
from evaluate import Evaluator  # noqa: E402
from model import QuantNet  # noqa: E402
from trainer import QATTrainer, make_loader  # noqa: E402


def synthetic_images(cfg: QATConfig, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, cfg.num_classes, (cfg.num_samples,), generator=g)
    protos = torch.randn(cfg.num_classes, cfg.in_channels, 1, 1, generator=g)
    noise = torch.randn(cfg.num_samples, cfg.in_channels, cfg.image_size, cfg.image_size, generator=g)
    return protos[labels] + 0.5 * noise, labels


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = QATConfig(seed=seed, num_samples=steps * 8)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = QuantNet(cfg).to(device)
    images, labels = synthetic_images(cfg, seed)
    trainer = QATTrainer(model, cfg, device)
    losses = trainer.fit(make_loader(images, labels, cfg.batch_size), epochs=1)
    model.eval()
    evaluator = Evaluator(model, cfg)
    report = evaluator.evaluate(images.to(device), labels.to(device))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "train_correct": float(trainer.train_correct),
        "sat_frac": float(trainer.sat_history[-1]),
        "top1": float(report["top1"]),
        f"top{cfg.topk}": float(report[f"top{cfg.topk}"]),
        "bits": float(model.stem.w_fq.bits),
        "min_val_sum": float(model.body.a_fq.observer.min_val.sum()),
        "param_sum": float(sum(p.sum() for p in model.parameters())),
    }


if __name__ == "__main__":
    print(run())
