"""Entry point for the corpus runner: a few retriever updates and recall@k, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import RetrieverConfig  # noqa: E402
from data import PairCorpus  # noqa: E402
from trainer import RetrieverTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = RetrieverConfig(seed=seed)
    device = torch.device("cpu")
    corpus = PairCorpus(cfg, seed)
    trainer = RetrieverTrainer(cfg, device, steps)
    losses = trainer.fit(corpus, steps)
    metrics = trainer.evaluate(corpus)
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "recall@1": float(metrics["recall@1"]),
        "recall@5": float(metrics["recall@5"]),
        "temperature": float(torch.exp(-trainer.log_temp.detach())),
        "queue_ptr": float(trainer.queue.ptr),
        "seen_ids": float(trainer.queue.seen_ids.numel()),
        "hard_pool": float(len(trainer.hard_pool)),
        "bar_n": float(trainer.pbar.n),
    }


if __name__ == "__main__":
    print(run())
