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

from model import MoEModel  # noqa: E402


def make(device: str = "cuda") -> dict:
    """make_graphed_callables' target: the model's forward+backward (bench mode graphed_callables)."""
    torch.manual_seed(0)
    model = MoEModel(in_dim=12).to(device)
    sample = torch.randn(4, 6, 12, device=device, requires_grad=True)
    sample_mask = torch.ones(4, 6, dtype=torch.bool, device=device)
    return {"step": model, "args": (sample, sample_mask)}
