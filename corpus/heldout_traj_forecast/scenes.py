"""Synthetic driving scenes with a varying number of agents."""

from __future__ import annotations

import torch

from config import ForecastConfig


def make_scene(cfg: ForecastConfig, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    n = int(torch.randint(2, cfg.max_agents + 1, (1,), generator=g))
    start = torch.randn(n, 1, 2, generator=g) * 5.0
    vel = torch.randn(n, 1, 2, generator=g)
    turn = 0.05 * torch.randn(n, 1, 1, generator=g)
    t = torch.arange(cfg.hist_len + cfg.fut_len, dtype=torch.float32)[None, :, None]
    path = start + vel * t + turn * t.pow(2)
    return path[:, : cfg.hist_len], path[:, cfg.hist_len :]


def scene_batches(cfg: ForecastConfig, seed: int):
    g = torch.Generator().manual_seed(seed)
    scene_id = 0
    while True:
        tracks, futures, ids = [], [], []
        for _ in range(cfg.scenes_per_batch):
            h, f = make_scene(cfg, g)
            tracks.append(h)
            futures.append(f)
            ids.append(scene_id)
            scene_id += 1
        yield tracks, futures, ids
