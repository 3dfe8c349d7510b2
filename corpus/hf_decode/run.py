"""Entry point for the corpus runner: sample a few continuations on CPU, return token checksums."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from generation import Generator  # noqa: E402
from modeling import TinyConfig, TinyForCausalLM  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    model = TinyForCausalLM(TinyConfig())
    gen = Generator(model, batch_size=3, max_length=24, device=torch.device("cpu"))
    prompt = torch.randint(2, model.config.vocab_size, (3, 5))
    rows = gen.generate(prompt, max_new_tokens=steps + 4)
    checksum = sum((i + 1) * (j + 1) * t for i, row in enumerate(rows) for j, t in enumerate(row)) % 1_000_003
    return {
        "checksum": float(checksum),
        "length": float(len(rows[0])),
        "unfinished": float(gen.unfinished.sum()),
        "streamed": float(len(gen.streamer.token_cache)),
        "seen_tokens": float(gen.cache.get_seq_length()),
    }


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    lm = TinyForCausalLM(TinyConfig()).to(dev)
    g = Generator(lm, batch_size=3, max_length=24, device=dev, echo=True)
    print(g.generate(torch.randint(2, 48, (3, 5)), max_new_tokens=12))
    print(run())
