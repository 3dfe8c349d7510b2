"""`graphsafe capture` factory for this program: builds its objects the way its own GPU path does
and returns the step that path captures, with the same arguments (bench/bench_corpus_capture.py
runs it on the original and on the `graphsafe fix`ed copy)."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from train import Trainer, TrainConfig, lr_at, synthetic_batches  # noqa: E402


def make(device: str = "cuda") -> dict:
    torch.manual_seed(0)
    cfg = TrainConfig()
    trainer = Trainer(cfg, torch.device(device))
    x, y = next(synthetic_batches(cfg, 0))
    return {"step": trainer.train_step, "args": (x.to(device), y.to(device), lr_at(cfg, 0))}
