"""Entry point for the corpus runner: sample a couple of images on CPU."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SamplerConfig  # noqa: E402
from pipeline import CFGPipeline  # noqa: E402


class CountingBar:
    def __init__(self):
        self.n = 0

    def update(self, k: int = 1) -> None:
        self.n += k


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    seen = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = SamplerConfig(num_steps=steps + 1, preview_every=2, preview_dir=tmp)
        bar = CountingBar()
        pipe = CFGPipeline(cfg, torch.device("cpu"), progress=bar)
        cond = torch.randn(cfg.batch_size, 3, cfg.context_dim, generator=torch.Generator().manual_seed(seed + 7))
        with torch.no_grad():
            image = pipe(cond, steps + 1, seed, callback=lambda i, x: seen.append(float(x.abs().mean())))
            cfg.sampler = "dpmpp_2m"
            image2 = pipe(cond, steps + 1, seed)
        previews = len(os.listdir(tmp))
    return {
        "image_mean": float(image.mean()),
        "image_std": float(image.std()),
        "image2_mean": float(image2.mean()),
        "last_abs_latent": float(seen[-1]),
        "nfe": float(pipe.nfe),
        "bar": float(bar.n),
        "previews": float(previews),
        "trajectory_len": float(pipe.trajectory.shape[0]),
    }


if __name__ == "__main__":
    print(run())
