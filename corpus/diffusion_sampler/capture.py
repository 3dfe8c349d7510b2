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

from model import Denoiser  # noqa: E402
from sample import Sampler  # noqa: E402
from scheduler import DDIMScheduler  # noqa: E402


def make(device: str = "cuda") -> dict:
    torch.manual_seed(0)
    sampler = Sampler(Denoiser().to(device), DDIMScheduler(num_train_timesteps=100, device=torch.device(device)))
    sampler.scheduler.set_timesteps(10)
    labels = (torch.arange(8) % 4).to(device)
    x = torch.randn(labels.shape[0], 2).to(device)
    return {"step": sampler.denoise_step, "args": (x, sampler.scheduler.timesteps[0], labels)}
