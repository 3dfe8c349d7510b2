"""Entry point for the corpus runner: two generation requests on CPU, return token checksums."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from generate import build  # noqa: E402


def _checksum(rows: list[list[int]]) -> float:
    return float(sum((i + 1) * (j + 1) * t for i, row in enumerate(rows) for j, t in enumerate(row)) % 1_000_003)


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    gen = build(seed, torch.device("cpu"))
    prompt = torch.randint(1, gen.model.config.vocab_size, (3, 5))
    result: dict[str, float] = {}
    for name, temperature in (("cool", 0.8), ("hot", 1.3)):
        rows = gen.generate(prompt, max_new_tokens=steps + 4, temperature=temperature)
        result[f"{name}_checksum"] = _checksum(rows)
        result[f"{name}_len"] = float(sum(len(r) for r in rows))
        result[f"{name}_finished"] = float(gen.state.finished.sum())
        result[f"{name}_lengths"] = float(gen.state.lengths.sum())
        result[f"{name}_streamed"] = float(len(gen.state.stream))
    return result


if __name__ == "__main__":
    print(run())
