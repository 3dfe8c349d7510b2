from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import EngineConfig
from kv_cache import PagedKVCache


class Rotary(nn.Module):
    def __init__(self, head_dim: int):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim)))
        self._cache: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hit = self._cache.get((positions.data_ptr(), positions.shape[0]))  # expect: GS506
        if hit is not None:
            return hit
        freqs = positions.float()[:, None] * self.inv_freq[None]
        out = (freqs.cos(), freqs.sin())
        self._cache[(positions.data_ptr(), positions.shape[0])] = out  # expect: GS503, GS506
        return out

    @staticmethod
    def apply(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., ::2], x[..., 1::2]
        cos, sin = cos[:, None], sin[:, None]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class PagedAttention(nn.Module):
    def __init__(self, cfg: EngineConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x, cos, sin, cache: PagedKVCache, page_ids, block_table, slot_mask):
        b = x.shape[0]
        q, k, v = self.qkv(x).view(b, 3, self.n_heads, self.head_dim).unbind(1)
        q, k = Rotary.apply(q, cos, sin), Rotary.apply(k, cos, sin)
        cache.write(self.layer_idx, page_ids, k, v)
        keys, values = cache.gather(self.layer_idx, block_table)
        scores = torch.einsum("bhd,bthd->bht", q, keys) / self.head_dim**0.5
        mask = slot_mask.repeat_interleave(cache.block_size, dim=1, output_size=keys.shape[1])
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        out = torch.einsum("bht,bthd->bhd", scores.softmax(-1), values)
        return self.proj(out.reshape(b, -1))


class TinyDecoder(nn.Module):
    def __init__(self, cfg: EngineConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.rotary = Rotary(cfg.d_model // cfg.n_heads)
        self.layers = nn.ModuleList(PagedAttention(cfg, i) for i in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, ids, positions, cache, page_ids, block_table, slot_mask):
        h = self.embed(ids)
        cos, sin = self.rotary.cos_sin(positions)
        for layer in self.layers:
            h = h + layer(F.layer_norm(h, h.shape[-1:]), cos, sin, cache, page_ids, block_table, slot_mask)
        return self.lm_head(self.norm(h))
