"""Entry point for the corpus runner: a few Gaussian-splatting iterations on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from cameras import CameraSet  # noqa: E402
from config import SplatConfig  # noqa: E402
from trainer import SplatTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    random.seed(seed)
    torch.manual_seed(seed)
    cfg = SplatConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cameras = CameraSet(cfg.num_cameras, cfg.image_size, seed, device)
    trainer = SplatTrainer(cfg, cameras, device)
    if device.type == "cuda":
        trainer.capture()
    losses = trainer.fit(steps * 2)
    g = trainer.gaussians
    return {
        "last_loss": float(losses[max(losses)]),
        "loss_sum": float(sum(float(v) for v in losses.values())),
        "ema_loss": float(trainer.ema_loss),
        "live_gaussians": float(g.alive.sum()),
        "active_sh_degree": float(g.active_sh_degree),
        "xyz_sum": float(g._xyz.detach().sum()),
        "opacity_mean": float(g.get_opacity.detach().sum() / g.alive.sum()),
        "xyz_lr": float(trainer.optimizer.param_groups[0]["lr"]),
    }


if __name__ == "__main__":
    print(run())
