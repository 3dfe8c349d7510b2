"""Agent encoder, social attention and a multimodal trajectory decoder."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint_sequential

from config import ForecastConfig


class ResidualMLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.net(x)


class Forecaster(nn.Module):
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Linear(cfg.hist_len * 2, cfg.dim)
        self.blocks = nn.Sequential(*[ResidualMLP(cfg.dim) for _ in range(cfg.n_blocks)])
        self.social = nn.MultiheadAttention(cfg.dim, 4, batch_first=True)
        self.goal_head = nn.Linear(cfg.dim, cfg.n_modes * 2)
        self.traj_head = nn.Linear(cfg.dim + 2, cfg.fut_len * 2)
        self.mode_head = nn.Linear(cfg.dim, cfg.n_modes)
        self._anchor_cache: dict = {}

    def _anchors_for(self, x: torch.Tensor) -> torch.Tensor:
        key = hash(x)  # expect: GS506
        if key not in self._anchor_cache:
            steps = torch.linspace(0.0, 1.0, self.cfg.fut_len, device=x.device)
            self._anchor_cache[key] = steps[None, :, None]  # expect: GS503
        return self._anchor_cache[key]

    def forward(self, hist: torch.Tensor, valid: torch.Tensor, fut: torch.Tensor, tf_ratio: float):
        b, a = hist.shape[:2]
        origin = hist[:, :, -1:]
        h = self.embed((hist - origin).flatten(2))
        if self.cfg.grad_ckpt and self.training:
            h = checkpoint_sequential(self.blocks, 2, h, use_reentrant=False)  # expect: GS603
        else:
            h = self.blocks(h)
        ctx, _ = self.social(h, h, h, key_padding_mask=valid == 0)
        h = h + ctx
        goal_pred = self.goal_head(h).view(b, a, self.cfg.n_modes, 2)
        goal_true = (fut[:, :, -1:] - origin).expand(-1, -1, self.cfg.n_modes, -1)
        goal = tf_ratio * goal_true + (1.0 - tf_ratio) * goal_pred  # expect: GS301
        feats = torch.cat([h[:, :, None].expand(-1, -1, self.cfg.n_modes, -1), goal], dim=-1)
        offsets = self.traj_head(feats).view(b, a, self.cfg.n_modes, self.cfg.fut_len, 2)
        pred = origin[:, :, None] + offsets + goal[:, :, :, None] * self._anchors_for(hist)
        return pred, self.mode_head(h)
