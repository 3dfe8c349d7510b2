"""A small sequence classifier written the graph-safe way: every branch in the forward pass is on
a shape, a config flag, `self.training`, `None` or a dtype, never on a tensor value."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from masking import masked_mean, padding_mask


@dataclass
class Config:
    vocab_size: int = 50
    max_len: int = 12
    dim: int = 32
    n_head: int = 4
    n_classes: int = 3
    use_bias: bool = True
    use_pos_emb: bool = True
    dropout: float = 0.1
    pad_id: int = 0


class SelfAttention(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.qkv = nn.Linear(config.dim, 3 * config.dim, bias=config.use_bias)
        self.proj = nn.Linear(config.dim, config.dim, bias=config.use_bias)

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None = None) -> torch.Tensor:
        if x.dim() == 2:
            x = x.unsqueeze(0)
        B, T, C = x.shape
        H = self.config.n_head
        q, k, v = self.qkv(x).view(B, T, 3, H, C // H).permute(2, 0, 3, 1, 4)
        attn_mask = None
        if key_padding is not None:
            attn_mask = ~key_padding[:, None, None, :]
        p = self.config.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.dim)
        self.attn = SelfAttention(config)
        self.norm2 = nn.LayerNorm(config.dim)
        self.ff = nn.Sequential(nn.Linear(config.dim, 2 * config.dim), nn.GELU(), nn.Linear(2 * config.dim, config.dim))
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), key_padding))
        x = x + self.drop(self.ff(self.norm2(x)))
        return x


class Classifier(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.tok = nn.Embedding(config.vocab_size, config.dim)
        self.pos = nn.Embedding(config.max_len, config.dim) if config.use_pos_emb else None
        self.blocks = nn.ModuleList([Block(config), Block(config)])
        self.head = nn.Linear(config.dim, config.n_classes, bias=config.use_bias)

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor | None = None):
        if not isinstance(tokens, torch.Tensor):
            raise TypeError("tokens must be a tensor")
        if tokens.dtype != torch.long:
            tokens = tokens.long()
        if tokens.shape[0] > 1 and tokens.size(-1) > self.config.max_len:
            tokens = tokens[:, : self.config.max_len]
        key_padding = padding_mask(tokens, self.config.pad_id)
        h = self.tok(tokens)
        if self.pos is not None:
            h = h + self.pos(torch.arange(tokens.size(1), device=tokens.device))
        for block in self.blocks:
            h = block(h, key_padding)
        h = h.clone()
        h[~key_padding] = 0.0  # zero the padded positions (a masked write of a scalar, no sync)
        logits = self.head(masked_mean(h, key_padding))
        if labels is None:
            return logits, None
        if self.training:
            loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        else:
            loss = F.cross_entropy(logits, labels)
        return logits, loss
