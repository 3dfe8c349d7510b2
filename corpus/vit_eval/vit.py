"""A small vision transformer (patch embedding, class token, pre-norm blocks) in the timm style."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ViTConfig:
    img_size: int = 16
    patch_size: int = 4
    in_chans: int = 3
    num_classes: int = 6
    embed_dim: int = 32
    depth: int = 2
    num_heads: int = 2
    fused_attn: bool = True


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int, fused_attn: bool):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = fused_attn
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            x = attn.softmax(dim=-1) @ v
        return self.proj(x.transpose(1, 2).reshape(B, N, C))


class Block(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.embed_dim)
        self.attn = Attention(cfg.embed_dim, cfg.num_heads, cfg.fused_attn)
        self.norm2 = nn.LayerNorm(cfg.embed_dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.embed_dim, 2 * cfg.embed_dim), nn.GELU(),
                                 nn.Linear(2 * cfg.embed_dim, cfg.embed_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = nn.Conv2d(cfg.in_chans, cfg.embed_dim, cfg.patch_size, stride=cfg.patch_size)
        n_patches = (cfg.img_size // cfg.patch_size) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, n_patches + 1, cfg.embed_dim) * 0.02)
        self.blocks = nn.Sequential(*(Block(cfg) for _ in range(cfg.depth)))
        self.norm = nn.LayerNorm(cfg.embed_dim)
        self.head = nn.Linear(cfg.embed_dim, cfg.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.cfg.img_size:
            x = F.interpolate(x, size=(self.cfg.img_size, self.cfg.img_size), mode="bilinear", align_corners=False)
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])
