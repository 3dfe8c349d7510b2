"""Entry point for the corpus runner: a few segmentation train steps and one evaluation on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SegConfig  # noqa: E402
from evaluator import Evaluator  # noqa: E402
from trainer import SegTrainer  # noqa: E402


def synthetic_sample(size: tuple[int, int], n_classes: int, g: torch.Generator, ignore_index: int):
    h, w = size
    target = torch.randint(0, n_classes, (h // 4, w // 4), generator=g)
    target = target.repeat_interleave(4, 0).repeat_interleave(4, 1)
    image = torch.randn(3, h, w, generator=g) * 0.3
    image[0] += target.float() / n_classes
    target[0, :] = ignore_index
    return image, target


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 5)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = SegConfig(seed=seed, vis_dir=os.path.join(tmp, "vis"), verbose_eval=False)
        trainer = SegTrainer(cfg, torch.device("cpu"))
        train = [synthetic_sample((cfg.crop, cfg.crop), cfg.n_classes, g, cfg.ignore_index) for _ in range(4)]
        curve: list = []
        trainer.fit(train, steps, curve)
        evaluator = Evaluator(trainer.model, cfg, torch.device("cpu"))
        val = [synthetic_sample((cfg.eval_size, cfg.eval_size - 4 * (i % 2)), cfg.n_classes, g, cfg.ignore_index) for i in range(4)]
        miou = evaluator.evaluate(val)
    return {
        "last_loss": float(curve[-1]),
        "loss_sum": float(sum(float(c) for c in curve)),
        "running_loss": float(trainer.running_loss),
        "miou": float(miou),
        "confmat_total": float(evaluator.confmat.mat.sum()),
        "class_counts": float(trainer.class_counts.sum()),
        "weight_max": float(trainer.loss_weights.max()),
        "lr": float(trainer.lr),
    }


if __name__ == "__main__":
    print(run())
