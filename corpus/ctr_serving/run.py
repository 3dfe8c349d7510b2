"""Entry point for the corpus runner: score a few bursts of synthetic requests, on CPU."""

from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import torch  # noqa: E402

from config import ServingConfig  # noqa: E402
from server import Request, ScoringServer, serve_forever  # noqa: E402


def make_requests(cfg: ServingConfig, n: int, start_id: int, gen: torch.Generator) -> list[Request]:
    reqs = []
    for i in range(n):
        raw = torch.randint(0, 10_000, (cfg.num_sparse, cfg.bag_len), generator=gen)
        cut = int(torch.randint(1, cfg.bag_len + 1, (1,), generator=gen))
        raw[:, cut:] = -1
        reqs.append(Request(start_id + i, int(torch.randint(0, 1000, (1,), generator=gen)),
                            torch.randn(cfg.num_dense, generator=gen).abs() * 3, raw, time.perf_counter()))
    return reqs


def run(steps: int = 3, seed: int = 0) -> dict[str, float]:
    torch.manual_seed(seed)
    cfg = ServingConfig(seed=seed)
    device = torch.device("cpu")
    server = ScoringServer(cfg, device)
    gen = torch.Generator().manual_seed(seed + 13)
    server.calibrate(torch.randn(32, cfg.num_dense, generator=gen).abs() * 3)
    if device.type == "cuda":
        server.capture_buckets()
    traffic = [make_requests(cfg, 3 + 4 * (i % 2), 100 * i, gen) for i in range(steps)]
    ramp = [min(100.0, 25.0 * (i + 1)) for i in range(steps)]
    results = serve_forever(server, traffic, ramp)
    stream = [s.clone() for s in server.score_stream([make_requests(cfg, 4, 1000, gen)])]
    ragged_ids = [torch.randint(0, 500, (cfg.num_sparse * 2,), generator=gen) for _ in range(2)]
    ragged = server.ragged_fn(torch.ones(2, cfg.num_dense), ragged_ids, torch.zeros(2, dtype=torch.long))
    return {
        "score_sum": float(sum(r.sum() for r in results)),
        "last_score_mean": float(results[-1].mean()),
        "requests_served": float(server.requests_served),
        "positives": float(server.stats["positives"]),
        "arm_b": float(server.arm_counts[1]),
        "stream_sum": float(stream[0].sum()),
        "ragged_sum": float(ragged.sum()),
        "feature_mean_sum": float(server.feature_mean.sum()),
    }


if __name__ == "__main__":
    print(run())
