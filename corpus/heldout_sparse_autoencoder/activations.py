"""A shuffled store of residual-stream activations from a tiny random language model."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import LMConfig


class TinyLM(nn.Module):
    def __init__(self, cfg: LMConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        return h + self.mlp(h)


class ActivationStore:
    def __init__(self, cfg: LMConfig, batch_size: int, generator: torch.Generator):
        self.cfg = cfg
        self.batch_size = batch_size
        self.g = generator
        self.lm = TinyLM(cfg).eval()
        self.buffer = torch.empty(0, cfg.d_model)
        self.ptr = 0

    @torch.no_grad()
    def refill(self) -> None:
        tokens = torch.randint(0, self.cfg.vocab, (self.cfg.n_seqs, self.cfg.seq_len), generator=self.g)
        acts = self.lm(tokens).flatten(0, 1)
        self.buffer = acts[torch.randperm(acts.shape[0], generator=self.g)]
        self.ptr = 0

    def next_batch(self) -> torch.Tensor:
        if self.ptr + self.batch_size > self.buffer.shape[0]:
            self.refill()
        batch = self.buffer[self.ptr : self.ptr + self.batch_size]
        self.ptr += self.batch_size
        return batch
