from __future__ import annotations

import torch
import torch.nn as nn

from config import ASRConfig


class StreamingEncoder(nn.Module):
    """Frame-stacking + GRU encoder with attention over a cache carried from chunk to chunk."""

    def __init__(self, cfg: ASRConfig):
        super().__init__()
        self.cfg = cfg
        self.subsample = nn.Linear(2 * cfg.feat_dim, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_positions, cfg.d_model)
        self.cell = nn.GRUCell(cfg.d_model, cfg.d_model)
        self.att = nn.MultiheadAttention(cfg.d_model, cfg.n_heads, batch_first=True)
        self.register_buffer("hidden", torch.zeros(cfg.batch_size, cfg.d_model))
        self.frame_offset = 0

    def reset(self) -> None:
        self.hidden.zero_()
        self.frame_offset = 0

    def forward_chunk(self, feats: torch.Tensor, lengths: torch.Tensor,
                      att_cache: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if (lengths < 2).any():  # expect: GS201
            raise ValueError("every chunk needs at least two frames")
        frames = feats[:, : lengths.max()]  # expect: GS105
        b, t, f = frames.shape
        x = self.subsample(frames.reshape(b, t // 2, 2 * f))
        pos = torch.arange(x.shape[1], device=x.device) + self.frame_offset  # expect: GS301
        x = x + self.pos_emb(pos.clamp(max=self.cfg.max_positions - 1))
        outs = []
        for i in range(x.shape[1]):
            self.hidden = self.cell(x[:, i], self.hidden)  # expect: GS401
            outs.append(self.hidden)
        h = torch.stack(outs, dim=1)
        att_cache = torch.cat([att_cache, h], dim=1)  # expect: GS404
        ctx, _ = self.att(h, att_cache, att_cache, need_weights=False)
        self.frame_offset += x.shape[1]  # expect: GS302
        return h + ctx, att_cache
