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

from agent import Agent  # noqa: E402
from env import CorridorEnv  # noqa: E402


def make(device: str = "cuda") -> dict:
    torch.manual_seed(0)
    env = CorridorEnv(4, seed=0)
    obs = env.reset()
    agent = Agent(obs_dim=len(obs[0]), n_actions=2, device=torch.device(device))
    return {"step": agent.act, "args": (obs,)}
