"""Entry point for the corpus runner: stream a few tokens from a tiny Mamba LM on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import GenerationConfig, MambaConfig  # noqa: E402
from generate import MambaGenerator  # noqa: E402
from mamba import MambaLM  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    model = MambaLM(MambaConfig())
    pieces: list[str] = []
    gen_cfg = GenerationConfig(max_new_tokens=steps * 2)
    gen = MambaGenerator(model, gen_cfg, torch.device("cpu"), on_text=pieces.append)
    texts = gen.generate(["the cat", "a dog!"], temperature=0.7, top_p=0.85, seed=seed)
    texts2 = gen.generate(["hello", "world"], temperature=0.0, top_p=1.0, seed=seed + 1)
    return {
        "chars_0": float(len(texts[0])),
        "chars_1": float(len(texts[1])),
        "greedy_chars": float(sum(len(t) for t in texts2)),
        "pieces": float(len(pieces)),
        "history_sum": float(gen.history.sum()),
        "repeats": float(gen.repeats),
        "seqlen_offset": float(gen.cache.seqlen_offset),
        "ssm_state_norm": float(sum(s.norm() for s in gen.cache.ssm_states)),
        "conv_state_norm": float(sum(s.norm() for s in gen.cache.conv_states)),
    }


if __name__ == "__main__":
    print(run())
