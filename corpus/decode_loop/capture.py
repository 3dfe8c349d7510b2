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

from generate import Generator, decode_step  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402
from sampling import sample_next  # noqa: E402


def make(device: str = "cuda", block_size: int = 512) -> dict:
    """A long KV cache: a trial runs the step some 100 times (warm-up, replays, timing) and every
    call appends one position."""
    torch.manual_seed(0)
    gen = Generator(GPT(GPTConfig(block_size=block_size)).to(device), 3, torch.device(device))
    prompt = torch.randint(1, 64, (3, 5), device=device)
    for cache in gen.caches:
        cache.reset()
    gen.state.reset(prompt.size(1) + 12)
    with torch.no_grad():
        logits = gen.model(prompt, gen.caches)[:, -1, :]  # prefill, eager, as Generator.generate does
        gen.static_tokens.copy_(sample_next(logits, 0.8, gen.top_k))
    return {"step": decode_step, "args": (gen.model, gen.static_tokens, gen.caches, gen.state, 0.8, gen.top_k)}
