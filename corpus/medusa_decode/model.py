"""A tiny causal LM that attends to a KV cache prefix plus its own block of tokens."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import MedusaConfig
from kv_cache import KVCache


class CausalBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads

    def forward(self, x: torch.Tensor, pk: torch.Tensor, pv: torch.Tensor, attn_mask: torch.Tensor):
        n, length, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(n, length, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        pk = pk.expand(n, -1, -1, -1)
        pv = pv.expand(n, -1, -1, -1)
        scores = torch.cat([q @ pk.transpose(-1, -2), q @ k.transpose(-1, -2)], dim=-1) * self.head_dim**-0.5
        full_mask = torch.cat([attn_mask.new_ones(length, pk.shape[2]), attn_mask], dim=1)
        scores = scores.masked_fill(~full_mask, float("-inf"))
        att = scores.softmax(-1) @ torch.cat([pv, v], dim=2)
        x = x + self.proj(att.transpose(1, 2).reshape(n, length, -1))
        x = x + self.mlp(self.ln2(x))
        return x, k, v


class TinyLM(nn.Module):
    def __init__(self, cfg: MedusaConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_embed = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList([CausalBlock(cfg.d_model, cfg.n_heads) for _ in range(cfg.n_layers)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward_tokens(self, tokens: torch.Tensor, positions: torch.Tensor, cache: KVCache, attn_mask: torch.Tensor):
        x = self.embed(tokens) + self.pos_embed(positions)
        kvs = []
        for i, block in enumerate(self.blocks):
            pk, pv = cache.prefix(i)
            x, k, v = block(x, pk, pv, attn_mask)
            kvs.append((k, v))
        return self.ln_f(x), kvs
