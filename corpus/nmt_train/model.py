from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from config import NMTConfig


def _check_tokens(module: nn.Module, args: tuple) -> None:
    if args[0].dim() != 2:
        raise ValueError("expected (batch, time) token ids")


class SinusoidalPositions(nn.Module):
    def __init__(self, dim: int, max_len: int = 256):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
        table = torch.zeros(max_len, dim)
        table[:, 0::2] = torch.sin(pos * div)
        table[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("table", table, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.table[: tokens.shape[1]].unsqueeze(0)


class Encoder(nn.Module):
    def __init__(self, cfg: NMTConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.src_vocab, cfg.d_model, padding_idx=cfg.pad)
        self.positions = SinusoidalPositions(cfg.d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.d_model, cfg.heads, cfg.ffn, dropout=0.1, batch_first=True)
            for _ in range(cfg.enc_layers)
        )

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        pad_mask = src == self.cfg.pad
        x = self.embed(src) * math.sqrt(self.cfg.d_model) + self.positions(src)
        for layer in self.layers:
            if self.cfg.activation_checkpointing and self.training:
                x = checkpoint(layer, x, None, pad_mask, use_reentrant=False, preserve_rng_state=False)
            else:
                x = layer(x, src_key_padding_mask=pad_mask)
        return x


class Decoder(nn.Module):
    def __init__(self, cfg: NMTConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.tgt_vocab, cfg.d_model, padding_idx=cfg.pad)
        self.positions = SinusoidalPositions(cfg.d_model)
        layer = nn.TransformerDecoderLayer(cfg.d_model, cfg.heads, cfg.ffn, dropout=0.1, batch_first=True)
        self.layers = nn.TransformerDecoder(layer, cfg.dec_layers)
        self.out = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)

    def forward(self, prev: torch.Tensor, memory: torch.Tensor, src_pad: torch.Tensor) -> torch.Tensor:
        T = prev.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=prev.device), 1)
        x = self.embed(prev) * math.sqrt(self.cfg.d_model) + self.positions(prev)
        x = self.layers(x, memory, tgt_mask=causal, memory_key_padding_mask=src_pad)
        return self.out(x)


class Transformer(nn.Module):
    def __init__(self, cfg: NMTConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.encoder.register_forward_pre_hook(_check_tokens)  # expect: GS706
        self.decoder = Decoder(cfg)

    def graph_encoder(self, sample_src: torch.Tensor) -> None:
        self.encoder = torch.cuda.make_graphed_callables(self.encoder, (sample_src,))

    def forward(self, src: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
        memory = self.encoder(src)
        return self.decoder(prev, memory, src == self.cfg.pad)
