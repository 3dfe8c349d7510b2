"""Entry point for the corpus runner: a few pre-training steps of a tiny GPT on CPU."""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import TrainConfig  # noqa: E402
from trainer import PretrainTrainer, make_loader  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(seed=seed, ckpt_dir=os.path.join(tmp, "ckpt"))
        device = torch.device("cpu")
        trainer = PretrainTrainer(cfg, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = make_loader(cfg, n_windows=cfg.batch_size * (steps * 2 + 1))
            losses = trainer.fit(loader, steps * 2)
        n_ckpts = len(os.listdir(cfg.ckpt_dir))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(float(v) for v in losses)),
        "loss_ema": float(trainer.loss_ema),
        "skipped_steps": float(trainer.skipped_steps),
        "tokens_seen": float(trainer.tokens_seen),
        "grad_norm_last": float(trainer.grad_norm_history[-1]),
        "checkpoints": float(n_ckpts),
        "param_sum": float(sum(p.detach().sum() for p in trainer.model.parameters())),
    }


if __name__ == "__main__":
    print(run())
