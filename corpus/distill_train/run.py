"""Entry point for the corpus runner: a few distillation epochs on CPU."""

from __future__ import annotations

import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DistillConfig  # noqa: E402
from trainer import DistillTrainer  # noqa: E402


class PostfixBar:
    def __init__(self):
        self.postfix = {}

    def set_postfix(self, **kw) -> None:
        self.postfix = kw


def make_batches(cfg: DistillConfig, n: int, seed: int):
    g = torch.Generator().manual_seed(seed + 11)
    proto = torch.randn(cfg.n_classes, cfg.in_dim, generator=g)
    out = []
    for _ in range(n):
        y = torch.randint(0, cfg.n_classes, (cfg.batch_size,), generator=g)
        x = proto[y] + 0.5 * torch.randn(cfg.batch_size, cfg.in_dim, generator=g)
        out.append((x, y))
    return out


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = DistillConfig(seed=seed, metrics_path=os.path.join(tmp, "metrics.jsonl"), ckpt_dir=tmp)
        bar = PostfixBar()
        trainer = DistillTrainer(cfg, torch.device("cpu"), progress=bar)
        last: dict = {}
        total = trainer.fit(make_batches(cfg, 2, seed), steps, last)
        n_ckpt = sum(1 for f in os.listdir(tmp) if f.endswith(".pt"))
    return {
        "loss_total": float(total),
        "last_loss": float(last[steps - 1]),
        "bar_loss": float(bar.postfix["loss"]),
        "grad_norm": float(trainer.grad_norms[-1]),
        "teacher_conf": float(trainer.teacher_conf),
        "ema_updates": float(trainer.ema.num_updates),
        "ema_sum": float(sum(v.float().sum() for v in trainer.ema.shadow.values())),
        "student_sum": float(sum(p.detach().sum() for p in trainer.student.parameters())),
        "checkpoints": float(n_ckpt),
    }


if __name__ == "__main__":
    print(run())
