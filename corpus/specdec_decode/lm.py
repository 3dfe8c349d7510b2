"""A tiny causal LM with a preallocated KV cache per layer. The same class serves as the draft model
(one layer, narrow) and the target model (two layers, wider)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class KVCache:
    def __init__(self, batch: int, heads: int, max_len: int, head_dim: int, device: torch.device):
        self.k = torch.zeros(batch, heads, max_len, head_dim, device=device)
        self.v = torch.zeros_like(self.k)
        self.pos = 0

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        T = k.size(2)
        self.k[:, :, self.pos:self.pos + T] = k  # expect: GS301
        self.v[:, :, self.pos:self.pos + T] = v  # expect: GS301
        self.pos += T  # expect: GS302
        return self.k[:, :, :self.pos], self.v[:, :, :self.pos]  # expect: GS301

    def rollback(self, n: int) -> None:
        """Forget the last `n` positions (rejected draft tokens)."""
        self.pos -= n  # expect: GS302

    def reset(self) -> None:
        self.pos = 0


class Layer(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        B, T, W = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, W // self.heads).permute(2, 0, 3, 1, 4)
        k, v = cache.append(k, v)
        S = k.size(2)
        causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, W))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 48, width: int = 32, layers: int = 2, heads: int = 2, max_len: int = 64):
        super().__init__()
        self.heads, self.width, self.max_len = heads, width, max_len
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(max_len, width)
        self.layers = nn.ModuleList(Layer(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def make_caches(self, batch: int, device: torch.device) -> list[KVCache]:
        return [KVCache(batch, self.heads, self.max_len, self.width // self.heads, device) for _ in self.layers]

    def forward(self, tokens: torch.Tensor, caches: list[KVCache]) -> torch.Tensor:
        if tokens.dim() == 1:
            tokens = tokens[:, None]
        start = caches[0].pos
        positions = torch.arange(start, start + tokens.size(1), device=tokens.device)  # expect: GS301
        x = self.tok(tokens) + self.pos(positions)
        for layer, cache in zip(self.layers, caches):
            x = layer(x, cache)
        return self.head(self.ln_f(x))
