"""Entry point for the corpus runner: evaluates a randomly initialised detector on synthetic boxes, on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import DetectorConfig  # noqa: E402
from evaluator import Evaluator, SyntheticBoxes, make_loader  # noqa: E402
from model import Detector  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = DetectorConfig(tta_noise=0.01, verbose=False)
    model = Detector(cfg)
    batch_size = 2
    evaluator = Evaluator(model, cfg, torch.device("cpu"), batch_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator
        out = evaluator.evaluate(make_loader(SyntheticBoxes(cfg, steps * batch_size, seed), batch_size), score_thresh=0.35)
    return {
        "mAP": float(out["mAP"]),
        "num_dets": out["num_dets"],
        "images": out["images"],
        "num_gt": float(evaluator.metrics.num_gt.sum()),
        "tp": float(evaluator.metrics.all_tp.sum()),
        "score_sum": float(evaluator.metrics.all_scores.sum()),
    }


if __name__ == "__main__":
    print(run())
