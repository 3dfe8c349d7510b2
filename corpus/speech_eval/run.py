"""Entry point for the corpus runner."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from evaluate import evaluate  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    return evaluate(steps, seed, torch.device("cpu"))


if __name__ == "__main__":
    print(run())
