"""Entry point for the corpus runner: a few self-supervised depth steps on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DepthConfig  # noqa: E402
from data import ClipSampler, PlateauScale  # noqa: E402
from geometry import disp_to_depth  # noqa: E402
from trainer import DepthTrainer, depth_metrics  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = DepthConfig(seed=seed)
    device = torch.device("cuda" if torch.cuda.is_available() and os.environ.get("GS_USE_CUDA") else "cpu")
    trainer = DepthTrainer(cfg, device)
    sampler = ClipSampler(cfg, seed=seed)
    plateau = PlateauScale()
    batches = [sampler.sample() for _ in range(steps)]
    if device.type == "cuda":
        target, sources = batches[0]
        trainer.capture(target.to(device), [s.to(device) for s in sources])
    losses = trainer.fit(batches, plateau)
    with torch.no_grad():
        target, _ = batches[-1]
        depth = disp_to_depth(trainer.depth(target)[0], cfg.min_depth, cfg.max_depth)
    metrics = depth_metrics(depth, sampler.ground_truth(), cfg)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "lr_scale": float(trainer.lr_scale),
        "steps": float(trainer.step_count),
        "abs_rel": float(metrics["abs_rel"]),
        "rmse": float(metrics["rmse"]),
        "a1": float(metrics["a1"]),
        "mask_frac": float(trainer.mask_trace.sum()),
    }


if __name__ == "__main__":
    print(run())
