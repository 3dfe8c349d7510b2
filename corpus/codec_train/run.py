"""Entry point for the corpus runner: train a tiny residual-VQ codec for a few steps on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import random  # noqa: E402

import torch  # noqa: E402

from config import CodecConfig  # noqa: E402
from trainer import CodecTrainer  # noqa: E402


def synth_batch(cfg: CodecConfig, g: torch.Generator) -> torch.Tensor:
    n = cfg.frame * cfg.hop
    t = torch.arange(n).float() / cfg.sample_rate
    freqs = 200 + 800 * torch.rand(cfg.batch_size, 1, generator=g)
    return 0.5 * torch.sin(2 * torch.pi * freqs * t) + 0.01 * torch.randn(cfg.batch_size, n, generator=g)


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = CodecConfig(seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    with tempfile.TemporaryDirectory() as out_dir:
        trainer = CodecTrainer(cfg, torch.device("cpu"), out_dir)
        batches = [synth_batch(cfg, g) for _ in range(steps)]
        losses = trainer.fit(batches, warmup=2)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "bitrate_mean": float(trainer.bitrate_trace.mean()),
        "quiet_energy": float(torch.nan_to_num(trainer.quiet_energy)),
        "usage_sum": float(trainer.usage_hist.sum()),
        "steps_done": float(trainer.steps_done),
        "balancer_observed": float(trainer.balancer.observed),
        "codes_used": float(trainer.used_codes.numel()),
    }


if __name__ == "__main__":
    print(run())
