"""The two towers of a tiny CLIP: a patch-embedding image encoder and a one-block transformer over
padded token ids, each projected into the shared embedding space."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class ImageTower(nn.Module):
    def __init__(self, embed_dim: int = 32, width: int = 24, patch: int = 4, image_size: int = 16):
        super().__init__()
        self.image_size = image_size
        self.patch = nn.Conv2d(3, width, patch, patch)
        self.mlp = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.proj = nn.Linear(width, embed_dim, bias=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.dim() == 3:
            images = images.unsqueeze(0)
        if images.shape[-1] != self.image_size:
            images = F.interpolate(images, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False)
        h = self.patch(images).flatten(2).transpose(1, 2)
        h = h + self.mlp(h)
        return self.proj(h.mean(dim=1))


class Block(nn.Module):
    def __init__(self, width: int, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, h: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        B, T, W = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(B, T, 3, self.heads, W // self.heads).permute(2, 0, 3, 1, 4)
        bias = torch.zeros(B, 1, 1, T, device=h.device, dtype=q.dtype).masked_fill(~key_mask[:, None, None, :], float("-inf"))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        h = h + self.out(a.transpose(1, 2).reshape(B, T, W))
        return h + self.mlp(self.ln2(h))


class TextTower(nn.Module):
    def __init__(self, vocab: int = 64, embed_dim: int = 32, width: int = 24, max_len: int = 12, pad_id: int = 0):
        super().__init__()
        self.vocab = vocab
        self.pad_id = pad_id
        self.tok = nn.Embedding(vocab, width, padding_idx=pad_id)
        self.pos = nn.Parameter(torch.randn(max_len, width) * 0.02)
        self.block = Block(width)
        self.ln = nn.LayerNorm(width)
        self.proj = nn.Linear(width, embed_dim, bias=False)

    def forward(self, tokens: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        assert (tokens < self.vocab).all(), "token id out of range"  # expect: GS201
        if attention_mask is None:
            attention_mask = tokens != self.pad_id
        lengths = attention_mask.sum(dim=1)
        # trim the batch to its longest caption so short batches run faster
        max_len = int(lengths.max())  # expect: GS105
        tokens, attention_mask = tokens[:, :max_len], attention_mask[:, :max_len]  # expect: GS301
        h = self.tok(tokens) + self.pos[:max_len]  # expect: GS301
        h = self.ln(self.block(h, attention_mask))
        # pool at the last real token (the EOT position), picked with a tensor index
        pooled = h[torch.arange(h.size(0), device=h.device), lengths - 1]
        return self.proj(pooled)
