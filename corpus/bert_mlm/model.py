"""A small BERT encoder with an MLM head."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import MLMConfig


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        attn = torch.softmax(scores + attn_bias[:, None], dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.ln2(x))


class BertMLM(nn.Module):
    def __init__(self, cfg: MLMConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.pos = nn.Embedding(cfg.max_len, cfg.hidden)
        self.layers = nn.ModuleList([EncoderLayer(cfg.hidden, cfg.heads) for _ in range(cfg.layers)])
        self.norm = nn.LayerNorm(cfg.hidden)
        self.head = nn.Linear(cfg.hidden, cfg.vocab_size)
        self.gradient_checkpointing = cfg.grad_checkpointing

    def packed_bias(self, segment_ids: torch.Tensor) -> torch.Tensor:
        same_doc = segment_ids[:, :, None] == segment_ids[:, None, :]
        valid = (segment_ids > 0)[:, None, :]
        return torch.zeros(same_doc.shape, device=segment_ids.device).masked_fill(~(same_doc & valid), -1e4)

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor | None = None) -> torch.Tensor:
        if input_ids.dim() == 1:
            input_ids = input_ids[None]
        assert (input_ids < self.cfg.vocab_size).all(), "token id out of range"  # expect: GS201
        if segment_ids is None:
            segment_ids = torch.ones_like(input_ids)
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.tok(input_ids) + self.pos(positions)[None]
        bias = self.packed_bias(segment_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(layer, x, bias, use_reentrant=False)  # expect: GS603
            else:
                x = layer(x, bias)
        return self.head(self.norm(x))


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore_index)


def mlm_accuracy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int) -> torch.Tensor:
    keep = labels != ignore_index
    preds = logits.argmax(-1)
    picked = preds[keep]  # expect: GS108
    targets = torch.masked_select(labels, keep)  # expect: GS107
    return (picked == targets).float().mean()
