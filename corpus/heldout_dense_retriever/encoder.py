"""Shared transformer text encoder with mean pooling."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import RetrieverConfig


class TextEncoder(nn.Module):
    def __init__(self, cfg: RetrieverConfig, use_checkpoint: bool = True):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(cfg.seq_len, cfg.dim))
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.dim, 4, cfg.dim * 2, dropout=0.0, batch_first=True)
            for _ in range(cfg.n_layers)
        )
        self.proj = nn.Linear(cfg.dim, cfg.dim)
        self.use_checkpoint = use_checkpoint

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pad = tokens == 0
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for layer in self.layers:
            if self.use_checkpoint and self.training:
                h = checkpoint(layer, h, None, pad, use_reentrant=False)  # expect: GS603
            else:
                h = layer(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        pooled = (h * keep).sum(1) / keep.sum(1).clamp_min(1.0)
        return F.normalize(self.proj(pooled), dim=-1)
