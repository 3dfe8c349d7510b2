"""Encoder-decoder transformer with per-series instance normalisation (RevIN-style)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from config import ForecastConfig


class InstanceNorm(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps
        self._stats: dict = {}

    def normalize(self, x: torch.Tensor, pad_mask: torch.Tensor):
        w = (~pad_mask).to(x.dtype)
        n = w.sum(1, keepdim=True).clamp_min(1.0)
        mu = (x * w).sum(1, keepdim=True) / n
        sigma = (((x - mu) ** 2 * w).sum(1, keepdim=True) / n).sqrt()
        if (sigma < self.eps).any():  # expect: GS201
            sigma = sigma.clamp_min(self.eps)
        self._stats[id(x)] = (mu, sigma)  # expect: GS503, GS506
        return (x - mu) / sigma * w, mu, sigma

    @staticmethod
    def denormalize(q: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        return q * sigma.unsqueeze(-1) + mu.unsqueeze(-1)


class Encoder(nn.Module):
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.inp = nn.Linear(1, cfg.d_model)
        self.pos = nn.Parameter(torch.randn(1, cfg.max_lookback, cfg.d_model) * 0.02)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0, batch_first=True)
            for _ in range(cfg.n_layers)
        )
        self.grad_ckpt = cfg.grad_ckpt

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        h = self.inp(x.unsqueeze(-1)) + self.pos[:, -x.shape[1] :]
        for layer in self.layers:
            if self.grad_ckpt and self.training:
                h = checkpoint(layer, h, None, pad_mask, use_reentrant=False)  # expect: GS603
            else:
                h = layer(h, src_key_padding_mask=pad_mask)
        return h


class Decoder(nn.Module):
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.inp = nn.Linear(1, cfg.d_model)
        self.pos = nn.Parameter(torch.randn(1, cfg.horizon, cfg.d_model) * 0.02)
        self.layer = nn.TransformerDecoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0, batch_first=True)
        self.out = nn.Linear(cfg.d_model, len(cfg.quantiles))
        self.median_idx = cfg.quantiles.index(0.5)

    def decode_step(self, memory, mem_mask, history: torch.Tensor, y_prev: torch.Tensor):
        history = torch.cat([history, y_prev], dim=1)  # expect: GS404
        steps = history.shape[1]
        h = self.inp(history.unsqueeze(-1)) + self.pos[:, :steps]
        causal = torch.triu(torch.ones(steps, steps, dtype=torch.bool, device=h.device), 1)
        h = self.layer(h, memory, tgt_mask=causal, memory_key_padding_mask=mem_mask)
        return self.out(h[:, -1]), history

    def forward(self, memory, mem_mask, last_obs, target, tf_mask) -> torch.Tensor:
        history = last_obs.new_zeros(last_obs.shape[0], 0)
        y_prev = last_obs[:, None]
        outs = []
        for t in range(target.shape[1]):
            q, history = self.decode_step(memory, mem_mask, history, y_prev)
            outs.append(q)
            median = q[:, self.median_idx].detach()
            y_prev = torch.where(tf_mask[:, t], target[:, t], median)[:, None]
        return torch.stack(outs, 1)


class Seq2SeqForecaster(nn.Module):
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.norm = InstanceNorm(cfg.norm_eps)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def forward(self, ctx, pad_mask, target, tf_mask) -> torch.Tensor:
        if ctx.dim() != 2:
            raise ValueError(f"expected (batch, lookback) context, got {ctx.dim()} dims")
        x, mu, sigma = self.norm.normalize(ctx, pad_mask)
        memory = self.encoder(x, pad_mask)
        q = self.decoder(memory, pad_mask, x[:, -1], (target - mu) / sigma, tf_mask)
        return self.norm.denormalize(q, mu, sigma)
