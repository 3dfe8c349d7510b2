"""Entry point for the corpus runner: train a top-k SAE for a few steps, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from activations import ActivationStore  # noqa: E402
from config import SAEConfig  # noqa: E402
from trainer import SAETrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = SAEConfig(seed=seed)
    device = torch.device("cpu")
    store = ActivationStore(cfg.lm, cfg.batch_size, torch.Generator().manual_seed(seed + 1))
    trainer = SAETrainer(cfg, store, device)
    losses = trainer.fit(steps * 2)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "ema_l0": float(trainer.density.ema_l0),
        "dead_fraction": float(trainer.density.dead_fraction),
        "log_density_mean": float(trainer.density.log_density().mean()),
        "tokens_seen": float(trainer.density.tokens_seen),
        "n_resampled": float(trainer.n_resampled),
        "decoder_sum": float(trainer.sae.W_dec.sum()),
    }


if __name__ == "__main__":
    print(run())
