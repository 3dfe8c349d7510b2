"""Entry point for the corpus runner: a few validation batches on CPU, return the metric values."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from evaluate import EvalConfig, evaluate  # noqa: E402
from model import SensorNet  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = EvalConfig(verbose=False)
    model = SensorNet(cfg.channels, n_classes=cfg.n_classes)
    return {k: float(v) for k, v in evaluate(model, cfg, n_batches=steps, seed=seed, device=torch.device("cpu")).items()}


if __name__ == "__main__":
    print(run())
