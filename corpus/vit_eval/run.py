"""Entry point for the corpus runner: evaluate a few batches on CPU, return accuracy and counts."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from evaluate import EvalConfig, evaluate  # noqa: E402
from vit import VisionTransformer, ViTConfig  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    model = VisionTransformer(ViTConfig())
    result = evaluate(model, EvalConfig(print_per_class=False), n_batches=steps, seed=seed, device=torch.device("cpu"))
    return {k: float(v) for k, v in result.items()}


if __name__ == "__main__":
    print(run())
