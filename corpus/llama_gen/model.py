"""A tiny Llama-style decoder with RoPE, grouped-query attention and a static KV cache."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import LlamaConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Rotary(nn.Module):
    def __init__(self, head_dim: int, max_len: int, theta: float):
        super().__init__()
        inv = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("cos", freqs.cos(), persistent=False)
        self.register_buffer("sin", freqs.sin(), persistent=False)

    def forward(self, x: torch.Tensor, pos: int) -> torch.Tensor:
        cos = self.cos[pos : pos + 1]  # expect: GS301
        sin = self.sin[pos : pos + 1]  # expect: GS301
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class KVCache(nn.Module):
    def __init__(self, batch: int, kv_heads: int, max_len: int, head_dim: int):
        super().__init__()
        self.register_buffer("k", torch.zeros(batch, kv_heads, max_len, head_dim), persistent=False)
        self.register_buffer("v", torch.zeros(batch, kv_heads, max_len, head_dim), persistent=False)
        self.register_buffer("lengths", torch.zeros(batch, dtype=torch.long), persistent=False)
        self.filled = 0

    def reset(self) -> None:
        self.k.zero_()
        self.v.zero_()
        self.lengths.zero_()
        self.filled = 0

    def update(self, k_new: torch.Tensor, v_new: torch.Tensor, pos: int):
        self.k[:, :, pos] = k_new[:, :, 0]  # expect: GS301
        self.v[:, :, pos] = v_new[:, :, 0]  # expect: GS301
        self.lengths += 1
        self.filled += 1  # expect: GS302
        end = self.lengths.max()
        return self.k[:, :, :end], self.v[:, :, :end]  # expect: GS105


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig, batch: int):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.n_kv = cfg.n_kv_heads
        self.head_dim = cfg.dim // cfg.n_heads
        self.scale = self.head_dim ** -0.5
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * self.head_dim, cfg.dim, bias=False)
        self.rotary = Rotary(self.head_dim, cfg.max_seq_len, cfg.rope_theta)
        self.cache = KVCache(batch, cfg.n_kv_heads, cfg.max_seq_len, self.head_dim)

    def forward(self, x: torch.Tensor, pos: int) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv, self.head_dim).transpose(1, 2)
        q, k = self.rotary(q, pos), self.rotary(k, pos)
        keys, values = self.cache.update(k, v, pos)
        rep = self.n_heads // self.n_kv
        keys = keys[:, :, None].expand(-1, -1, rep, -1, -1).reshape(B, self.n_heads, -1, self.head_dim)
        values = values[:, :, None].expand(-1, -1, rep, -1, -1).reshape(B, self.n_heads, -1, self.head_dim)
        attn = (q @ keys.transpose(-2, -1)) * self.scale
        out = attn.softmax(-1) @ values
        return self.wo(out.transpose(1, 2).reshape(B, T, -1))


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig, batch: int, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attn = Attention(cfg, batch)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.w1 = nn.Linear(cfg.dim, cfg.ffn_hidden, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.ffn_hidden, bias=False)
        self.w2 = nn.Linear(cfg.ffn_hidden, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor, pos: int) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), pos)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig, batch: int = 1):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList([Block(cfg, batch, i) for i in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def reset_cache(self) -> None:
        for layer in self.layers:
            layer.attn.cache.reset()

    def forward(self, tokens: torch.Tensor, pos: int) -> torch.Tensor:
        if tokens.dim() == 1:
            tokens = tokens[:, None]
        h = self.embed(tokens) * torch.tensor(self.cfg.embed_scale, device=tokens.device)  # expect: GS402
        for layer in self.layers:
            h = layer(h, pos)
        return self.lm_head(self.norm(h))
