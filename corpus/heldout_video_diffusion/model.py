"""A small space-time denoiser: per-frame MLPs and temporal attention over frames."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from embeddings import timestep_embedding


class TemporalAttention(nn.Module):
    def __init__(self, dim: int, heads: int, max_frames: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.frame_pos = nn.Parameter(torch.randn(max_frames, dim) * 0.02)

    def forward(self, x: torch.Tensor, frame_mask: torch.Tensor) -> torch.Tensor:
        b, f, d = x.shape
        assert frame_mask.any(dim=-1).all(), "every clip needs a visible frame"  # expect: GS201
        x = x + self.frame_pos[:f]
        q, k, v = self.qkv(x).view(b, f, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scale = torch.tensor(q.shape[-1] ** -0.5, dtype=q.dtype, device=q.device)  # expect: GS402
        scores = (q @ k.transpose(-1, -2)) * scale
        scores = scores.masked_fill(~frame_mask[:, None, None, :], -1e4)
        out = scores.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, f, d))


class VideoBlock(nn.Module):
    def __init__(self, dim: int, heads: int, max_frames: int, text_dim: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.temporal = TemporalAttention(dim, heads, max_frames)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.cond = nn.Linear(text_dim, 2 * dim)

    def forward(self, h: torch.Tensor, cond: torch.Tensor, frame_mask: torch.Tensor) -> torch.Tensor:
        b, f, n, d = h.shape
        shift, gain = self.cond(cond).chunk(2, dim=-1)
        x = self.norm1(h) * (1 + gain[:, None, None]) + shift[:, None, None]
        x = x.permute(0, 2, 1, 3).reshape(b * n, f, d)
        mask = frame_mask.repeat_interleave(n, dim=0)
        x = self.temporal(x, mask).view(b, n, f, d).permute(0, 2, 1, 3)
        h = h + x
        return h + self.mlp(self.norm2(h))


class VideoDenoiser(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.inp = nn.Linear(cfg.channels, cfg.hidden)
        self.t_proj = nn.Linear(cfg.hidden, cfg.text_dim)
        self.text_emb = nn.Embedding(cfg.vocab, cfg.text_dim)
        self.blocks = nn.ModuleList(
            [VideoBlock(cfg.hidden, cfg.heads, cfg.frames, cfg.text_dim) for _ in range(cfg.depth)]
        )
        self.out = nn.Linear(cfg.hidden, cfg.channels)
        self.use_checkpoint = cfg.checkpoint_blocks

    def forward(self, x: torch.Tensor, t: torch.Tensor, text_ids: torch.Tensor, frame_mask=None) -> torch.Tensor:
        if frame_mask is None:
            frame_mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        if (t < 0).any() or (t >= self.cfg.timesteps).any():  # expect: GS201
            raise ValueError("timestep out of range")
        b, f, c, hh, ww = x.shape
        h = self.inp(x.permute(0, 1, 3, 4, 2).reshape(b, f, hh * ww, c))
        cond = self.text_emb(text_ids).mean(1) + self.t_proj(timestep_embedding(t, self.cfg.hidden))
        for block in self.blocks:
            if self.use_checkpoint and self.training:
                h = checkpoint(block, h, cond, frame_mask, use_reentrant=False)  # expect: GS603
            else:
                h = block(h, cond, frame_mask)
        out = self.out(h)
        return out.view(b, f, hh, ww, c).permute(0, 1, 4, 2, 3)
