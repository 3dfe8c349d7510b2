"""Entry point for the corpus runner: Medusa-decode two short prompts, on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import MedusaConfig  # noqa: E402
from decoder import MedusaDecoder, prompt_loader  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = MedusaConfig(max_new_tokens=6 * steps)
    device = torch.device("cpu")
    decoder = MedusaDecoder(cfg, device)
    g = torch.Generator().manual_seed(seed + 1)
    prompts = [torch.randint(3, cfg.vocab_size, (6,), generator=g) for _ in range(2)]
    replays: list = []
    generated: list[list[int]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, prompt in enumerate(prompt_loader(prompts)):
            temperature = cfg.temperature * (1.0 + 0.5 * i)
            generated.append(decoder.generate(prompt.to(device), temperature, replays))
    n_tokens = sum(len(t) for t in generated)
    return {
        "tokens": float(n_tokens),
        "token_sum": float(sum(sum(t) for t in generated)),
        "decode_steps": float(len(decoder.accept_history)),
        "mean_accepted": float(sum(decoder.accept_history) / max(1, len(decoder.accept_history))),
        "max_accepted": float(max(decoder.accept_history, default=0)),
        "cache_pos": float(decoder.cache.pos),
        "stream_chars": float(len(decoder.streamer.text())),
    }


if __name__ == "__main__":
    print(run())
