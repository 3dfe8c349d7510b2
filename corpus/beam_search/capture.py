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

from beam import BeamSearch  # noqa: E402
from model import TinyLM  # noqa: E402


def make(device: str = "cuda", max_len: int = 256) -> dict:
    """A long token buffer: a trial runs the step some 80 times (warm-up, replays, timing) and every
    call writes one more position."""
    torch.manual_seed(0)
    search = BeamSearch(TinyLM(max_len=max_len).to(device), batch=2, beams=3, max_len=max_len,
                        device=torch.device(device))
    search.start(torch.randint(2, 40, (2, 4), device=device))
    return {"step": search.beam_step, "args": ()}
