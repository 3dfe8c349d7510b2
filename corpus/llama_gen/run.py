"""Entry point for the corpus runner: greedy-ish sampling from a random tiny Llama, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import GenerationConfig, LlamaConfig  # noqa: E402
from generate import LlamaGenerator  # noqa: E402
from model import Llama  # noqa: E402
from tokenizer import CharTokenizer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    mcfg = LlamaConfig()
    gcfg = GenerationConfig(max_new_tokens=2 + 2 * steps, seed=seed)
    model = Llama(mcfg)
    gen = LlamaGenerator(model, CharTokenizer(mcfg.vocab_size), gcfg, torch.device("cpu"))
    text = gen.generate("the quick brown fox")
    entropies = torch.stack(gen.stats["entropy"])
    return {
        "n_tokens": float(gen.generated.shape[1]),
        "text_len": float(len(text)),
        "token_sum": float(gen.generated.sum()),
        "mean_entropy": float(entropies.mean()),
        "repeats": float(gen.repeats),
        "confident": float(sum(gen.stats["confident"])),
        "cache_filled": float(model.layers[0].attn.cache.filled),
    }


if __name__ == "__main__":
    print(run())
