"""Entry point for the corpus runner: a few T5 span-corruption pre-training steps on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import T5Config  # noqa: E402
from trainer import T5Trainer  # noqa: E402


def sample_docs(cfg: T5Config, g: torch.Generator) -> list:
    lengths = torch.randint(4, cfg.seq_len, (cfg.docs_per_batch,), generator=g).tolist()
    hi = cfg.vocab_size - cfg.n_sentinels
    return [torch.randint(2, hi, (n,), generator=g) for n in lengths]


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = T5Config(seed=seed)
    trainer = T5Trainer(cfg, torch.device("cpu"))
    g = torch.Generator().manual_seed(seed + 1)
    batches = [sample_docs(cfg, g) for _ in range(steps)]
    densities = [cfg.noise_density * (1.0 + 0.1 * i) for i in range(steps)]
    losses = trainer.fit(batches, densities)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "acc_mean": float(trainer.acc_sum / steps),
        "tokens_seen": float(trainer.tokens_seen),
        "loss_ema": float(trainer.loss_ema),
        "updates": float(trainer.updates),
        "length_total": float(trainer.length_trace.sum()),
        "doc_token_frac": float(trainer.doc_token_frac),
    }


if __name__ == "__main__":
    print(run())
