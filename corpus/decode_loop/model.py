"""A tiny GPT (nanoGPT-style) with a per-layer KV cache for incremental decoding."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 64
    block_size: int = 48
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    bias: bool = True
    debug_checks: bool = True


class KVCache(nn.Module):
    """Preallocated keys/values; `pos` is how many positions are filled."""

    def __init__(self, batch: int, n_head: int, max_len: int, head_dim: int, device=None):
        super().__init__()
        shape = (batch, n_head, max_len, head_dim)
        self.register_buffer("k", torch.zeros(shape, device=device), persistent=False)
        self.register_buffer("v", torch.zeros(shape, device=device), persistent=False)
        self.pos = 0

    def reset(self) -> None:
        self.pos = 0
        self.k.zero_()
        self.v.zero_()

    def update(self, k: torch.Tensor, v: torch.Tensor):
        T = k.size(2)
        self.k[:, :, self.pos : self.pos + T] = k  # expect: GS301
        self.v[:, :, self.pos : self.pos + T] = v  # expect: GS301
        self.pos += T  # expect: GS302
        return self.k[:, :, : self.pos], self.v[:, :, : self.pos]  # expect: GS301


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.head_dim = config.n_embd // config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v)
        scale = torch.tensor(self.head_dim, dtype=q.dtype, device=q.device).rsqrt()  # expect: GS402
        att = (q @ k.transpose(-2, -1)) * scale
        if T > 1:
            S = k.size(2)
            causal = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(diagonal=S - T)
            att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, config: GPTConfig, layer: int):
        super().__init__()
        self.config = config
        self.layer = layer
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), cache)
        x = x + self.mlp(self.ln_2(x))
        if self.config.debug_checks and not torch.isfinite(x).all():  # expect: GS201
            raise FloatingPointError(f"non-finite hidden state after layer {self.layer}")
        return x


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList(Block(config, i) for i in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying

    def make_caches(self, batch: int, device=None) -> list[KVCache]:
        c = self.config
        return [KVCache(batch, c.n_head, c.block_size, c.n_embd // c.n_head, device) for _ in range(c.n_layer)]

    def forward(self, idx: torch.Tensor, caches: list[KVCache] | None = None) -> torch.Tensor:
        B, T = idx.size()
        start = caches[0].pos if caches is not None else 0
        assert start + T <= self.config.block_size, f"sequence too long: {start + T}"
        if self.config.debug_checks:
            assert idx.max() < self.config.vocab_size, "token id out of range"  # expect: GS201
        pos = torch.arange(start, start + T, dtype=torch.long, device=idx.device)  # expect: GS301
        x = self.wte(idx) + self.wpe(pos)
        for i, block in enumerate(self.h):
            x = block(x, caches[i] if caches is not None else None)
        return self.lm_head(self.ln_f(x))
