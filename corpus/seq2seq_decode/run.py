"""Entry point for the corpus runner: greedy and seeded sampling translation of random sources, on CPU."""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import GenerationConfig, Seq2SeqConfig  # noqa: E402
from generate import translate  # noqa: E402
from model import Translator  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig()
    model = Translator(cfg)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, cfg.src_vocab, (2 * steps, cfg.max_src_len), generator=g)
    src[:, -2:] = cfg.pad_id
    device = torch.device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator
        greedy = translate(model, src, GenerationConfig(return_step_logits=True, bad_words_ids=[[5, 6], []]), batch_size=2, device=device)
        sampled = translate(model, src, GenerationConfig(do_sample=True, seed=seed), batch_size=2, device=device)
    return {
        "greedy_tokens_sum": float(greedy["tokens"].sum()),
        "greedy_score": float(greedy["scores"].mean()),
        "greedy_logits": float(greedy["n_logits"]),
        "sampled_tokens_sum": float(sampled["tokens"].sum()),
        "sampled_score": float(sampled["scores"].mean()),
        "alignment_steps": float(greedy["alignment_steps"]),
    }


if __name__ == "__main__":
    print(run())
