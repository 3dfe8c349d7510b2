"""Entry point for the corpus runner: serve a few batches of slates and learn from the simulated clicks, on CPU."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import RankerConfig  # noqa: E402
from service import RankerService  # noqa: E402


class ClickSimulator:
    def __init__(self, cfg: RankerConfig, seed: int):
        g = torch.Generator().manual_seed(seed + 11)
        self.w = torch.randn(cfg.context_dim, cfg.n_items, generator=g)
        self.g = g

    def __call__(self, contexts: torch.Tensor, slate: torch.Tensor):
        items = slate[:, 0]
        p = torch.sigmoid((contexts @ self.w).gather(-1, items[:, None]).squeeze(-1))
        return items, (torch.rand(p.shape, generator=self.g) < p).float()


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    logging.getLogger("ranker").addHandler(logging.NullHandler())
    cfg = RankerConfig(seed=seed)
    sim = ClickSimulator(cfg, seed)
    g = torch.Generator().manual_seed(seed + 1)
    losses = []
    with tempfile.TemporaryDirectory() as out_dir, contextlib.redirect_stdout(io.StringIO()):
        svc = RankerService(cfg, torch.device("cpu"), out_dir)
        for i in range(steps):
            ctx = torch.randn(cfg.requests_per_batch, cfg.context_dim, generator=g)
            _, loss = svc.handle(ctx, 1.0 / (1 + i), sim)
            losses.append(float(loss))
    return {
        "last_loss": losses[-1],
        "loss_sum": float(sum(losses)),
        "ctr_ema": float(svc.ctr_ema),
        "reward_total": float(svc.reward_log.sum()),
        "precision_mean": float(svc.posterior.precision.mean()),
        "requests_served": float(svc.requests_served),
        "propensity_mean": float(torch.stack(svc.propensity_log).mean()),
        "exploration": float(svc.exploration),
        "posterior_updates": float(svc.posterior.n_updates),
    }


if __name__ == "__main__":
    print(run())
