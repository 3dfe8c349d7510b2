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

from evaluate import MetricsLogger, eval_step  # noqa: E402
from model import CTCModel  # noqa: E402


def make(device: str = "cuda") -> dict:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    model = CTCModel().to(device).eval()
    lengths = torch.randint(10, 21, (4,), generator=gen)
    feats = torch.randn(4, 20, 16, generator=gen)
    return {"step": eval_step, "args": (model, feats.to(device), lengths.to(device), MetricsLogger())}
