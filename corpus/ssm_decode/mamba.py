"""A minimal Mamba language model with a recurrent single-token step."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from cache import InferenceCache
from config import MambaConfig


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaMixer(nn.Module):
    def __init__(self, cfg: MambaConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        d_inner = cfg.expand * cfg.d_model
        self.d_state = cfg.d_state
        self.dt_rank = cfg.dt_rank
        self.in_proj = nn.Linear(cfg.d_model, 2 * d_inner, bias=False)
        self.conv_weight = nn.Parameter(torch.randn(d_inner, cfg.d_conv) / math.sqrt(cfg.d_conv))
        self.conv_bias = nn.Parameter(torch.zeros(d_inner))
        self.x_proj = nn.Linear(d_inner, cfg.dt_rank + 2 * cfg.d_state, bias=False)
        self.dt_proj = nn.Linear(cfg.dt_rank, d_inner)
        a = torch.arange(1, cfg.d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(d_inner))
        self.out_proj = nn.Linear(d_inner, cfg.d_model, bias=False)

    def step(self, x: torch.Tensor, cache: InferenceCache) -> torch.Tensor:
        xz = self.in_proj(x)
        x, z = xz.chunk(2, dim=-1)
        conv_state = cache.push_conv(self.layer_idx, x)
        x = F.silu((conv_state * self.conv_weight).sum(-1) + self.conv_bias)
        dt, B, C = torch.split(self.x_proj(x), [self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        if (dt > 10.0).any():  # expect: GS201
            dt = dt.clamp(max=10.0)
        A = -torch.exp(self.A_log)
        dA = torch.exp(dt[..., None] * A)
        dBx = dt[..., None] * B[:, None, :] * x[..., None]
        ssm_state = cache.ssm_states[self.layer_idx] * dA + dBx
        cache.write_ssm(self.layer_idx, ssm_state)  # expect: GS503
        y = (ssm_state @ C[..., None]).squeeze(-1) + self.D * x
        return self.out_proj(y * F.silu(z))


class MambaLM(nn.Module):
    def __init__(self, cfg: MambaConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.norms = nn.ModuleList([RMSNorm(cfg.d_model, cfg.eps) for _ in range(cfg.n_layers)])
        self.mixers = nn.ModuleList([MambaMixer(cfg, i) for i in range(cfg.n_layers)])
        self.norm_f = RMSNorm(cfg.d_model, cfg.eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.embed.weight

    def new_cache(self, batch: int, device: torch.device) -> InferenceCache:
        c = self.cfg
        return InferenceCache(c.n_layers, batch, c.expand * c.d_model, c.d_conv, c.d_state, device)

    def step(self, token: torch.Tensor, cache: InferenceCache) -> torch.Tensor:
        if token.dim() == 2:
            token = token[:, -1]
        h = self.embed(token)
        for norm, mixer in zip(self.norms, self.mixers):
            h = h + mixer.step(norm(h), cache)
        return self.lm_head(self.norm_f(h))
