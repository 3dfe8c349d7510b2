"""A tiny encoder-decoder transformer with a static self-attention KV cache."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import ModelDims


class AudioEncoder(nn.Module):
    def __init__(self, dims: ModelDims):
        super().__init__()
        self.conv1 = nn.Conv1d(dims.n_mels, dims.d_model, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(dims.d_model, dims.d_model, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", torch.randn(dims.n_audio_ctx, dims.d_model) * 0.02)
        self.block = nn.TransformerEncoderLayer(dims.d_model, dims.n_head, 2 * dims.d_model, dropout=0.0, batch_first=True)
        self.ln_post = nn.LayerNorm(dims.d_model)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        assert x.shape[1:] == self.positional_embedding.shape, "incorrect audio shape"
        x = self.block(x + self.positional_embedding)
        return self.ln_post(x)


class KVCache(nn.Module):
    def __init__(self, batch: int, n_head: int, max_len: int, head_dim: int):
        super().__init__()
        self.register_buffer("k", torch.zeros(batch, n_head, max_len, head_dim))
        self.register_buffer("v", torch.zeros(batch, n_head, max_len, head_dim))

    def write(self, pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.k.index_copy_(2, pos, k)
        self.v.index_copy_(2, pos, v)
        return self.k, self.v


class SelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, cache: KVCache, pos: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in (q, k, v))
        keys, values = cache.write(pos, k, v)
        steps = torch.arange(keys.shape[2], device=x.device)
        mask = steps[None, :] > pos[:, None]
        att = (q @ keys.transpose(-2, -1)) / math.sqrt(d // self.n_head)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.out((att @ values).transpose(1, 2).reshape(b, t, d))


class CrossAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model, bias=False)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self._kv: dict = {}

    def project(self, xa: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        key = id(xa)  # expect: GS506
        if key not in self._kv:
            self._kv[key] = (self.key(xa), self.value(xa))  # expect: GS503
        return self._kv[key]

    def forward(self, x: torch.Tensor, xa: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        k, v = self.project(xa)
        h = self.n_head
        q = self.query(x).view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, -1, h, d // h).transpose(1, 2)
        v = v.view(b, -1, h, d // h).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.out(out.transpose(1, 2).reshape(b, t, d))


class TextDecoder(nn.Module):
    def __init__(self, dims: ModelDims, batch: int):
        super().__init__()
        self.token_embedding = nn.Embedding(dims.n_vocab, dims.d_model)
        self.positional_embedding = nn.Parameter(torch.randn(dims.n_text_ctx, dims.d_model) * 0.02)
        self.attn_ln = nn.LayerNorm(dims.d_model)
        self.attn = SelfAttention(dims.d_model, dims.n_head)
        self.cross_ln = nn.LayerNorm(dims.d_model)
        self.cross = CrossAttention(dims.d_model, dims.n_head)
        self.mlp = nn.Sequential(nn.Linear(dims.d_model, 2 * dims.d_model), nn.GELU(), nn.Linear(2 * dims.d_model, dims.d_model))
        self.ln = nn.LayerNorm(dims.d_model)
        self.cache = KVCache(batch, dims.n_head, dims.n_text_ctx, dims.d_model // dims.n_head)
        nn.init.normal_(self.token_embedding.weight, std=0.3)

    def forward(self, tokens: torch.Tensor, xa: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = self.token_embedding(tokens) + self.positional_embedding[pos][:, None, :]
        x = x + self.attn(self.attn_ln(x), self.cache, pos)
        x = x + self.cross(self.cross_ln(x), xa)
        x = self.ln(x + self.mlp(x))
        if x.isnan().any():  # expect: GS201
            x = torch.nan_to_num(x)
        return x @ self.token_embedding.weight.t()


class Whisper(nn.Module):
    def __init__(self, dims: ModelDims, batch: int):
        super().__init__()
        self.dims = dims
        self.encoder = AudioEncoder(dims)
        self.decoder = TextDecoder(dims, batch)
