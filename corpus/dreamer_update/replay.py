"""A tiny sequence replay of a noisy linear system, for the CPU run."""

from __future__ import annotations

import torch

from config import DreamerConfig


class SequenceReplay:
    def __init__(self, cfg: DreamerConfig, episodes: int, length: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        wm = cfg.wm
        dyn = torch.randn(wm.obs_dim, wm.obs_dim, generator=g) * 0.3
        ctrl = torch.randn(wm.act_dim, wm.obs_dim, generator=g) * 0.5
        obs = torch.zeros(episodes, length, wm.obs_dim)
        act = torch.rand(episodes, length, wm.act_dim, generator=g) * 2 - 1
        x = torch.randn(episodes, wm.obs_dim, generator=g)
        for t in range(length):
            obs[:, t] = x
            x = torch.tanh(x @ dyn + act[:, t] @ ctrl) + 0.05 * torch.randn(episodes, wm.obs_dim, generator=g)
        self.obs, self.act = obs, act
        self.rew = -obs.pow(2).mean(-1)
        self.cont = (torch.rand(episodes, length, generator=g) > 0.1).float()
        self.gen = g
        self.seq_len = cfg.seq_len

    def sample(self, batch: int):
        ep = torch.randint(0, self.obs.shape[0], (batch,), generator=self.gen)
        start = torch.randint(0, self.obs.shape[1] - self.seq_len + 1, (batch,), generator=self.gen)
        idx = start[:, None] + torch.arange(self.seq_len)[None]
        take = lambda t: t[ep[:, None], idx]  # noqa: E731
        return take(self.obs), take(self.act), take(self.rew), take(self.cont)
