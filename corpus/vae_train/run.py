"""Entry point for the corpus runner: a few VAE steps on synthetic blobs, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import VAEConfig  # noqa: E402
from train import VAETrainer  # noqa: E402


def synthetic_batches(cfg: VAEConfig, n: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    coords = torch.linspace(-1, 1, cfg.image_size)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    out = []
    for _ in range(n):
        centers = torch.rand(cfg.batch_size, 2, generator=g) * 1.2 - 0.6
        d2 = (xx - centers[:, 0, None, None]) ** 2 + (yy - centers[:, 1, None, None]) ** 2
        out.append((d2 < 0.25).float().unsqueeze(1))
    return out


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = VAEConfig()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = VAETrainer(cfg, torch.device("cpu"), tmp, total_steps=steps)
        losses = trainer.fit(synthetic_batches(cfg, steps, seed))
        samples = trainer.sample(cfg.grid_rows ** 2)
        n_grids = len(os.listdir(os.path.join(tmp, "samples")))
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "running_recon": float(trainer.running_recon),
        "bank_rows": float(trainer.latent_bank.shape[0]),
        "kl_last": float(trainer.kl_history["kl"][-1]),
        "active_last": float(trainer.kl_history["active"][-1]),
        "ema_updates": float(trainer.ema.updates),
        "sample_mean": float(samples.mean()),
        "grids": float(n_grids),
    }


if __name__ == "__main__":
    print(run())
