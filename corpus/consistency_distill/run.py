"""Entry point for the corpus runner: a few consistency-distillation updates on random images, on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import CDConfig  # noqa: E402
from distiller import ConsistencyDistiller  # noqa: E402
from previews import one_step_samples  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = CDConfig(seed=seed, out_dir=tmp, total_steps=max(steps, 1))
        dist = ConsistencyDistiller(cfg, torch.device("cpu"))
        gen = torch.Generator().manual_seed(seed + 1)
        batches = [torch.rand(cfg.batch_size, cfg.channels, cfg.image_size, cfg.image_size, generator=gen) * 2 - 1
                   for _ in range(steps)]
        losses = dist.fit(batches)
        grid = one_step_samples(lambda x, s: dist.consistency_fn(dist.target, x, s), 2,
                                (cfg.channels, cfg.image_size, cfg.image_size), cfg.sigma_max, gen)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "num_scales": float(dist.num_scales),
        "global_step": float(dist.global_step),
        "preview_mean": float(grid.mean()),
        "target_param_sum": float(sum(p.detach().sum() for p in dist.target.parameters())),
        "sigma_log_rows": float(dist.sigma_log.shape[0]),
    }


if __name__ == "__main__":
    print(run())
