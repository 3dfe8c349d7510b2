"""Entry point for the corpus runner: sample a few points with a freshly initialised denoiser."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from model import Denoiser  # noqa: E402
from sample import Sampler  # noqa: E402
from scheduler import DDIMScheduler  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    sampler = Sampler(Denoiser(), DDIMScheduler(num_train_timesteps=100))
    labels = torch.arange(8) % 4
    x = sampler.sample(labels, num_steps=steps + 2, generator=torch.Generator().manual_seed(seed))
    return {
        "sample_sum": float(x.sum()),
        "sample_norm": float(x.norm()),
        "previews": float(len(sampler.previews)),
        "preview_norm": float(sum(p.norm() for p in sampler.previews)),
        "step_index": float(sampler.scheduler.step_index),
    }


if __name__ == "__main__":
    print(run())
