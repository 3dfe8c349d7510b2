"""A tiny causal LM that recomputes the whole (fixed-length, padded) token buffer every step."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderLayer(nn.Module):
    def __init__(self, dim: int, n_head: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, n_head, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, causal: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab_size: int = 40, max_len: int = 16, dim: int = 32, n_head: int = 2, n_layer: int = 2):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        self.layers = nn.ModuleList(DecoderLayer(dim, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(dim)
        self.out_bias = nn.Parameter(torch.zeros(vocab_size))
        nn.init.normal_(self.tok.weight, std=0.1)
        self.register_buffer("causal", torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), diagonal=1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.size(1)
        x = self.tok(tokens) + self.pos[:T]
        for layer in self.layers:
            x = layer(x, self.causal[:T, :T])
        return F.linear(self.ln_f(x), self.tok.weight, self.out_bias)
