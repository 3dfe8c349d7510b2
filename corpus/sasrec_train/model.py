from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalBlock(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ln1 = nn.LayerNorm(hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, hidden * 2), nn.GELU(), nn.Linear(hidden * 2, hidden))

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
        q = self.ln1(x)
        h, _ = self.attn(q, q, q, attn_mask=causal, key_padding_mask=pad, need_weights=False)
        x = x + h
        return x + self.ff(self.ln2(x))


class SASRec(nn.Module):
    def __init__(self, n_items: int, hidden: int, heads: int, blocks: int, max_len: int = 64):
        super().__init__()
        self.item_emb = nn.Embedding(n_items, hidden, padding_idx=0)
        self.pos_emb = nn.Embedding(max_len, hidden)
        self.blocks = nn.ModuleList(CausalBlock(hidden, heads) for _ in range(blocks))
        self.out_ln = nn.LayerNorm(hidden)

    def encode(self, seqs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        pad = seqs == 0
        x = self.item_emb(seqs) + self.pos_emb(positions)[None]
        x = x.masked_fill(pad[..., None], 0.0)
        for block in self.blocks:
            x = block(x, pad)
        return self.out_ln(x)

    def score(self, h: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        return (h * self.item_emb(items)).sum(-1)

    def full_scores(self, h_last: torch.Tensor) -> torch.Tensor:
        return h_last @ self.item_emb.weight.t()
