"""Entry point for the corpus runner: train RotatE for a few steps and evaluate, on CPU."""

from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import KGConfig  # noqa: E402
from data import make_graph, true_tails  # noqa: E402
from evaluate import filtered_metrics  # noqa: E402
from trainer import KGETrainer  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    random.seed(seed)
    cfg = KGConfig(seed=seed)
    device = torch.device("cpu")
    g = torch.Generator().manual_seed(seed + 1)
    train, test = make_graph(cfg, g)
    trainer = KGETrainer(cfg, device)
    if device.type == "cuda":
        trainer.capture()
        trainer.graph_scorer()
    history: dict[str, torch.Tensor] = {}
    last = trainer.fit(train, steps * 2, g, history)
    metrics = filtered_metrics(trainer.model, test, true_tails(torch.cat([train, test])), cfg.hits_at)
    return {
        "last_loss": last,
        "mrr": metrics["mrr"],
        "hits@1": metrics["hits@1"],
        "hits@10": metrics["hits@10"],
        "entity_sum": float(trainer.model.entity.sum()),
        "steps": float(trainer.step),
        "adv_temperature": float(trainer.adv_temperature),
    }


if __name__ == "__main__":
    print(run())
