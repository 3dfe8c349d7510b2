"""Entry point for the corpus runner: speculative sampling of a few tokens on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from speculative import SpecConfig, build  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    decoder = build(seed, torch.device("cpu"), SpecConfig(eos_id=-1))  # no eos: always `steps` rounds
    out = []
    for temperature in (0.7, 1.3):
        torch.manual_seed(seed + 1)
        out = decoder.generate(torch.tensor([5, 9, 13, 2]), max_new_tokens=steps * 2, temperature=temperature)
    return {
        "tokens": float(len(out)),
        "token_sum": float(sum(out)),
        "accept_rate": float(decoder.stats["accepted"] / max(1, decoder.stats["drafted"])),
        "mean_accepted": float(sum(decoder.acceptance) / len(decoder.acceptance)),
        "cache_pos": float(decoder.target_caches[0].pos),
    }


if __name__ == "__main__":
    print(run())
