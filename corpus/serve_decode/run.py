"""Entry point for the corpus runner: a few batched paged-KV decode steps on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import EngineConfig, Request, SamplingParams  # noqa: E402
from engine import LLMEngine  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = EngineConfig()
    engine = LLMEngine(cfg, torch.device("cpu"))
    engine.sampler.gen.manual_seed(seed)
    params = [
        SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=16),
        SamplingParams(temperature=1.0, top_p=0.8, max_new_tokens=16, seed=seed + 7),
        SamplingParams(temperature=0.5, top_p=1.0, max_new_tokens=16, stop_token=5),
    ]
    for i, p in enumerate(params):
        engine.add_request(Request(f"req-{i}", prompt=[3 + i, 4, 5 + i], params=p))
    token_sum = 0.0
    for _ in range(steps):
        token_sum += float(engine.step().sum())
    finished = engine.retire_finished()
    return {
        "token_sum": float(token_sum),
        "generated": float(sum(len(v) for v in engine.generated.values())),
        "finished": float(len(finished)),
        "num_tokens": float(engine.cache.num_tokens),
        "write_offset": float(engine.cache.write_offset),
        "repeats": float(engine.repeats),
        "kv_abs": float(engine.cache.kv_pages.abs().sum()),
    }


if __name__ == "__main__":
    print(run())
