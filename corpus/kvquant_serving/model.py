"""A one-layer decoder that attends over the paged int8 KV cache."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import ServingConfig
from kv_cache import QuantizedPagedKVCache


class PagedAttention(nn.Module):
    def __init__(self, cfg: ServingConfig):
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)

    def forward(self, x, positions, slot_mapping, block_tables, context_lens, cache: QuantizedPagedKVCache):
        b = x.shape[0]
        q, k, v = self.qkv(x).view(b, 3, self.cfg.n_heads, self.cfg.head_dim).unbind(1)
        cache.write(k, v, slot_mapping)
        keys, values = cache.gather(block_tables, self.cfg.max_context)
        scores = torch.einsum("bhd,bthd->bht", q, keys) * self.scale
        pos = torch.arange(keys.shape[1], device=x.device)
        valid = pos[None, :] < context_lens[:, None]
        if not valid.any():  # expect: GS201
            return self.out(x)
        scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
        attn = scores.softmax(-1).nan_to_num(0.0)
        return self.out(torch.einsum("bht,bthd->bhd", attn, values).reshape(b, -1))


class TinyLM(nn.Module):
    def __init__(self, cfg: ServingConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_context, cfg.d_model)
        self.attn = PagedAttention(cfg)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, tokens, positions, slot_mapping, block_tables, context_lens, cache):
        while positions.max() >= self.pos.num_embeddings:  # expect: GS201
            positions = positions - self.pos.num_embeddings
        h = self.embed(tokens) + self.pos(positions)
        h = h + self.attn(self.norm(h), positions, slot_mapping, block_tables, context_lens, cache)
        return self.lm_head(self.norm(h)).float()


def log_softmax_gather(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return F.log_softmax(logits, -1).gather(-1, ids[:, None]).squeeze(-1)
