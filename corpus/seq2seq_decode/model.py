"""A one-layer encoder-decoder with cached single-token decoding."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from cache import StaticKVCache
from config import Seq2SeqConfig


class Encoder(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.src_vocab, cfg.d_model, padding_idx=cfg.pad_id)
        self.pos = nn.Parameter(torch.randn(cfg.max_src_len, cfg.d_model) * 0.02)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, 2 * cfg.d_model), nn.GELU(), nn.Linear(2 * cfg.d_model, cfg.d_model))
        self.norm = nn.LayerNorm(cfg.d_model)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        h = self.embed(src) + self.pos[: src.shape[1]]
        return self.norm(h + self.ff(h))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.h, self.dh = cfg.n_heads, cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.cross_q = nn.Linear(cfg.d_model, cfg.d_model)
        self.cross_kv = nn.Linear(cfg.d_model, 2 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.dh).transpose(1, 2)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor, cache: StaticKVCache) -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v = map(self._split, self.qkv(self.norm1(x)).chunk(3, dim=-1))
        keys, values = cache.update(k, v)
        att = (q @ keys.transpose(-1, -2)) / math.sqrt(self.dh)
        att = att.masked_fill(~cache.valid_mask().view(1, 1, 1, -1), float("-inf"))
        x = x + self.out((att.softmax(-1) @ values).transpose(1, 2).reshape(x.shape))
        cq = self._split(self.cross_q(self.norm2(x)))
        ck, cv = map(self._split, self.cross_kv(memory).chunk(2, dim=-1))
        cross = (cq @ ck.transpose(-1, -2)) / math.sqrt(self.dh)
        cross = cross.masked_fill(~memory_mask[:, None, None, :], float("-inf")).softmax(-1)
        return x + self.out((cross @ cv).transpose(1, 2).reshape(x.shape)), cross.mean(1)


class Translator(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, cfg.d_model)
        self.tgt_pos = nn.Embedding(cfg.max_tgt_len + 1, cfg.d_model)
        self.layer = DecoderLayer(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.tgt_vocab)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encoder(src), src != self.cfg.pad_id

    def decode_one(self, token: torch.Tensor, position: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor, cache: StaticKVCache) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.tgt_embed(token) + self.tgt_pos(position)
        h, cross = self.layer(x, memory, memory_mask, cache)
        return F.log_softmax(self.lm_head(h), dim=-1), cross
