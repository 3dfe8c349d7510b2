"""A small Vision Transformer with stochastic depth."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import ModelConfig


class DropPath(nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = 1.0 - self.p
        mask = x.new_empty(x.shape[0], 1, 1).bernoulli_(keep)
        return x * mask / keep


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scale = torch.tensor(self.head_dim ** -0.5, dtype=x.dtype, device=x.device)  # expect: GS402
        attn = (q @ k.transpose(-2, -1)) * scale
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(out)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, drop_path: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.attn = Attention(cfg.dim, cfg.heads)
        self.norm2 = nn.LayerNorm(cfg.dim)
        hidden = int(cfg.dim * cfg.mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, hidden), nn.GELU(), nn.Linear(hidden, cfg.dim))
        self.drop_path = DropPath(drop_path)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop_path(self.attn(self.norm1(x)))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class VisionTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_size = cfg.patch_size
        self.patch_embed = nn.Conv2d(3, cfg.dim, cfg.patch_size, cfg.patch_size)
        n_patches = (cfg.image_size // cfg.patch_size) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n_patches + 1, cfg.dim) * 0.02)
        rates = torch.linspace(0, cfg.drop_path_rate, cfg.depth).tolist()
        self.blocks = nn.ModuleList([Block(cfg, r) for r in rates])
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)
        self._pos_cache: dict = {}

    def _pos_embed_for(self, n_tokens: int) -> torch.Tensor:
        if n_tokens == self.pos_embed.shape[1]:
            return self.pos_embed
        cached = self._pos_cache.get((n_tokens, self.pos_embed.data_ptr()))  # expect: GS506
        if cached is None:
            grid = self.pos_embed[:, 1:].transpose(1, 2)
            grid = F.interpolate(grid, size=n_tokens - 1, mode="linear", align_corners=False)
            cached = torch.cat([self.pos_embed[:, :1], grid.transpose(1, 2)], dim=1)
            self._pos_cache[(n_tokens, self.pos_embed.data_ptr())] = cached  # expect: GS503, GS506
        return cached

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        assert images.dim() == 4 and images.shape[-1] % self.patch_size == 0
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1)
        x = x + self._pos_embed_for(x.shape[1])
        for blk in self.blocks:
            if self.cfg.grad_checkpointing and self.training:
                x = checkpoint(blk, x, use_reentrant=False)  # expect: GS603
            else:
                x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0])
