"""Entry point for the corpus runner: a few GraphSAGE mini-batch steps on a random graph, on CPU."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import SAGEConfig  # noqa: E402
from sampler import NeighborSampler  # noqa: E402
from train import SAGETrainer, fit  # noqa: E402


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = SAGEConfig(seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    feats = torch.randn(cfg.n_nodes, cfg.in_dim, generator=g)
    labels = (feats[:, 0] > 0).long() * 2 + (feats[:, 1] > 0).long()
    sampler = NeighborSampler(cfg.n_nodes, cfg.avg_degree, cfg.fanouts, g)
    trainer = SAGETrainer(cfg, feats)
    loss, acc = fit(trainer, sampler, labels, steps, g)
    return {
        "loss": float(loss),
        "accuracy": float(acc),
        "cache_hit_rate": float(trainer.cache.hit_rate),
        "smoothing": float(trainer.smoothing),
        "updates": float(trainer.updates),
        "logit_norm": float(trainer.logit_norm),
    }


if __name__ == "__main__":
    print(run())
