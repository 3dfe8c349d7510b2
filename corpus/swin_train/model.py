"""A tiny ConvNeXt-style network with stochastic depth and layer scale."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import SwinConfig


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def set_rate(self, p: float) -> None:
        self.drop_prob = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.drop_prob == 0.0 or not self.training:  # expect: GS301
            return x
        shape = (x.shape[0],) + (1,) * (x.dim() - 1)
        keep = torch.rand(shape, dtype=x.dtype, device=x.device) >= self.drop_prob  # expect: GS301
        return x * keep / (1.0 - self.drop_prob)  # expect: GS301


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim: int, layer_scale_init: float):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=3, padding=1, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.pw2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init * torch.ones(dim))
        self.drop_path = DropPath(0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pw2(F.gelu(self.pw1(self.norm(x))))
        x = (self.gamma * x).permute(0, 3, 1, 2)
        out = shortcut + self.drop_path(x)
        assert torch.isfinite(out).all(), "non-finite activations in block"  # expect: GS201
        return out


class TinyConvNeXt(nn.Module):
    def __init__(self, cfg: SwinConfig):
        super().__init__()
        self.cfg = cfg
        self.stem = nn.Sequential(
            nn.Conv2d(cfg.in_chans, cfg.dims[0], kernel_size=cfg.patch, stride=cfg.patch),
            LayerNorm2d(cfg.dims[0]),
        )
        self.stages = nn.ModuleList()
        self.downsamples = nn.ModuleList()
        for i, (dim, depth) in enumerate(zip(cfg.dims, cfg.depths)):
            self.stages.append(nn.Sequential(*[Block(dim, cfg.layer_scale_init) for _ in range(depth)]))
            if i + 1 < len(cfg.dims):
                self.downsamples.append(nn.Conv2d(dim, cfg.dims[i + 1], kernel_size=1))
        self.head_norm = nn.LayerNorm(cfg.dims[-1])
        self.head = nn.Linear(cfg.dims[-1], cfg.num_classes)

    def blocks(self) -> list[Block]:
        return [m for m in self.modules() if isinstance(m, Block)]

    def set_drop_path(self, rate: float) -> None:
        blocks = self.blocks()
        for i, blk in enumerate(blocks):
            blk.drop_path.set_rate(rate * i / max(1, len(blocks) - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % self.cfg.patch != 0:
            raise ValueError(f"image size {x.shape[-1]} not divisible by patch {self.cfg.patch}")
        x = self.stem(x)
        for i, stage in enumerate(self.stages):
            if self.cfg.grad_checkpointing and self.training:
                x = checkpoint(stage, x, use_reentrant=False)  # expect: GS603
            else:
                x = stage(x)
            if i < len(self.downsamples):
                x = self.downsamples[i](x)
        x = self.head_norm(x.mean((-2, -1)))
        return self.head(x)
