"""Entry point for the corpus runner: two guided flow-matching requests on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from pipeline import PipelineConfig, build  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    cfg = PipelineConfig(num_steps=steps + 2, guidance_rescale=0.5, stochastic=True)
    pipe = build(seed, torch.device("cpu"), cfg)
    labels = torch.arange(6) % 4
    results = {}
    for scale in (1.5, 4.0):
        x, trajectory = pipe(labels, guidance_scale=scale, generator=torch.Generator().manual_seed(seed + 1))
        results[f"norm_g{scale}"] = float(x.norm(dim=-1).mean())
        results[f"path_g{scale}"] = float(sum((b - a).norm(dim=-1).mean() for a, b in zip(trajectory, trajectory[1:])))
    results["final_step_index"] = float(pipe.scheduler.step_index)
    return results


if __name__ == "__main__":
    print(run())
