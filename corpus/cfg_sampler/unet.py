"""A very small conditional UNet and latent decoder."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import SamplerConfig


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([args.cos(), args.sin()], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, ch: int, emb_dim: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(4, ch)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.emb = nn.Linear(emb_dim, ch)
        self.norm2 = nn.GroupNorm(4, ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.emb(emb)[:, :, None, None]
        return x + self.conv2(F.silu(self.norm2(h)))


class CrossAttention(nn.Module):
    def __init__(self, ch: int, ctx_dim: int):
        super().__init__()
        self.q = nn.Linear(ch, ch)
        self.kv = nn.Linear(ctx_dim, 2 * ch)
        self.out = nn.Linear(ch, ch)

    def forward(self, x, ctx):
        b, c, h, w = x.shape
        seq = x.flatten(2).transpose(1, 2)
        k, v = self.kv(ctx).chunk(2, dim=-1)
        attn = F.scaled_dot_product_attention(self.q(seq), k, v)
        return x + self.out(attn).transpose(1, 2).reshape(b, c, h, w)


class TinyUNet(nn.Module):
    def __init__(self, cfg: SamplerConfig):
        super().__init__()
        ch = cfg.base_channels
        self.emb_dim = 4 * ch
        self.inp = nn.Conv2d(cfg.latent_channels, ch, 3, padding=1)
        self.time = nn.Sequential(nn.Linear(ch, self.emb_dim), nn.SiLU(), nn.Linear(self.emb_dim, self.emb_dim))
        self.down = ResBlock(ch, self.emb_dim)
        self.attn = CrossAttention(ch, cfg.context_dim)
        self.up = ResBlock(ch, self.emb_dim)
        self.outp = nn.Conv2d(ch, cfg.latent_channels, 3, padding=1)
        self.base = ch

    def forward(self, x: torch.Tensor, t: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        if t.dim() == 0:
            t = t.expand(x.shape[0])
        emb = self.time(timestep_embedding(t, self.base))
        h = self.down(self.inp(x), emb)
        h = self.attn(h, context)
        h = h if torch.isfinite(h).all() else torch.nan_to_num(h)  # expect: GS201
        return self.outp(self.up(h, emb))


class LatentDecoder(nn.Module):
    def __init__(self, cfg: SamplerConfig):
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Conv2d(cfg.latent_channels, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 16, 4, stride=2, padding=1)
        self.out = nn.Conv2d(16, cfg.image_channels, 3, padding=1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        mean = torch.tensor(self.cfg.latent_mean, device=z.device).view(1, -1, 1, 1)  # expect: GS402
        z = z / self.cfg.scaling_factor + mean
        return torch.tanh(self.out(F.silu(self.up(F.silu(self.proj(z))))))
