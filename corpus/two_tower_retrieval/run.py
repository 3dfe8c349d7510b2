"""Entry point for the corpus runner: a few two-tower retrieval updates and recall@k, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import RetrievalConfig  # noqa: E402
from data import synthetic_interactions  # noqa: E402
from trainer import RetrievalTrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = RetrievalConfig(seed=seed)
    trainer = RetrievalTrainer(cfg, torch.device("cpu"))
    batches = synthetic_interactions(cfg, steps + 1, seed)
    losses = trainer.fit(batches[:steps])
    recall = trainer.recall_at_k(batches[-1])
    return {
        "last_loss": float(losses[-1]),
        "loss_sum": float(sum(losses)),
        "recall_at_k": float(recall),
        "temperature": float(trainer.model.temperature),
        "queue_rows": float(trainer.item_queue.shape[0]),
        "seen_users": float(len(trainer.seen_users)),
        "freq_step": float(trainer.freq.step),
    }


if __name__ == "__main__":
    print(run())
