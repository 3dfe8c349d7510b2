"""Entry point for the corpus runner."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from beam import BeamSearch  # noqa: E402
from model import TinyLM  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    model = TinyLM()
    with torch.no_grad():
        model.out_bias[1] = 1.0  # an untrained LM: nudge eos so that some hypotheses finish early
    search = BeamSearch(model, batch=2, beams=3, max_len=16, eos_id=1)
    prompt = torch.randint(2, 40, (2, 4))
    best = search.search(prompt, max_new_tokens=steps + 3)
    return {
        "best_score_sum": float(sum(score for score, _ in best)),
        "token_checksum": float(sum((i + 1) * (j + 1) * t for i, (_, toks) in enumerate(best) for j, t in enumerate(toks))),
        "hypotheses": float(sum(len(h) for h in search.hypotheses)),
        "cur_len": float(search.cur_len),
        "scores_sum": float(search.scores.sum()),
    }


if __name__ == "__main__":
    print(run())
