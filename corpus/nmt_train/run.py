"""Entry point for the corpus runner: a few transformer NMT updates with BLEU hooks, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import NMTConfig  # noqa: E402
from data import update_groups  # noqa: E402
from trainer import NMTTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = NMTConfig(seed=seed)
    with tempfile.TemporaryDirectory() as workdir:
        trainer = NMTTrainer(cfg, torch.device("cpu"), workdir)
        losses = trainer.fit(update_groups(cfg, steps, seed))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "bleu": float(trainer.bleu_scores[-1]) if trainer.bleu_scores else 0.0,
        "num_updates": float(trainer.num_updates),
        "micro_batches": float(trainer.accumulated),
        "smoothing": float(trainer.smoothing),
        "loss_window_sum": float(trainer.loss_window.sum()),
        "averaged_param_sum": float(sum(p.detach().sum() for p in trainer.averaged_model.parameters())),
    }


if __name__ == "__main__":
    print(run())
