"""Entry point for the corpus runner: a few StyleGAN2 iterations on toy images, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import StyleGANConfig  # noqa: E402
from data import BlobImages  # noqa: E402
from trainer import StyleGANTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = StyleGANConfig(seed=seed)
    device = torch.device("cpu")
    trainer = StyleGANTrainer(cfg, device)
    data = BlobImages(cfg.img_res, cfg.img_channels, seed)
    g = torch.Generator().manual_seed(seed + 1)
    history: list = []
    out = {}
    for _ in range(steps * 2):
        real = data.batch(cfg.batch_size)
        z = torch.randn(cfg.batch_size, cfg.z_dim, generator=g)
        z_mix = torch.randn(cfg.batch_size, cfg.z_dim, generator=g)
        out = trainer.fit_batch(real, z, z_mix, history)
    samples = trainer.sample(torch.randn(cfg.batch_size, cfg.z_dim, generator=g))
    return {
        "loss_g": float(out["loss_g"]),
        "loss_d": float(out["loss_d"]),
        "loss_d_sum": float(sum(float(h["loss_d"]) for h in history)),
        "ada_p": float(trainer.augment.p),
        "pl_mean": float(trainer.pl_reg.pl_mean),
        "step": float(trainer.step),
        "ema_param_sum": float(sum(p.sum() for p in trainer.G_ema.parameters())),
        "sample_mean": float(samples.mean()),
    }


if __name__ == "__main__":
    print(run())
