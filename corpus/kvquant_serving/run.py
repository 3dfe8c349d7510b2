"""Entry point for the corpus runner: serve a few requests with continuous batching on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SamplingParams, ServingConfig  # noqa: E402
from engine import LLMEngine  # noqa: E402


def latency_summary(requests) -> dict[str, float]:
    ttft = [r.first_token_at - r.arrival for r in requests if r.first_token_at is not None]
    return {"n": float(len(ttft)), "ttft_ok": float(all(t >= 0 for t in ttft))}


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = ServingConfig(seed=seed)
    use_cuda = torch.cuda.is_available() and bool(os.environ.get("GS_USE_CUDA"))
    engine = LLMEngine(cfg, torch.device("cuda" if use_cuda else "cpu"))
    g = torch.Generator().manual_seed(seed + 3)
    for rid in range(6):
        prompt = torch.randint(1, cfg.vocab_size, (3 + rid % 3,), generator=g).tolist()
        params = SamplingParams(temperature=0.0 if rid % 3 == 0 else 0.8, top_p=0.9, max_tokens=2 + rid % 4)
        engine.submit(rid, prompt, params)
    if use_cuda:
        engine.scheduler.admit()
        engine.graph_lm_head(torch.randn(cfg.max_batch, cfg.d_model, device="cuda"))
        engine.capture()
    emitted = []
    for _ in range(steps * 2):
        emitted.extend(engine.step())
    finished = engine.scheduler.finished
    lat = latency_summary(finished + [r for r in engine.scheduler.running if r is not None])
    return {
        "token_sum": float(sum(emitted)),
        "finished": float(len(finished)),
        "decode_steps": float(engine.decode_steps),
        "cache_writes": float(engine.cache.writes),
        "k_scale_sum": float(engine.cache.k_scale.detach().sum()),
        "free_blocks": float(len(engine.cache.free_blocks)),
        "streamed_chars": float(sum(len(engine.detok.text(r)) for r in range(6))),
        "ttft_ok": lat["ttft_ok"],
    }


if __name__ == "__main__":
    print(run())
