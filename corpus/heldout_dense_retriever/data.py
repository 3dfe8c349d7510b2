"""Synthetic query/passage pairs with mined hard negatives."""

from __future__ import annotations

import torch

from config import RetrieverConfig


class PairCorpus:
    def __init__(self, cfg: RetrieverConfig, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.cfg = cfg
        self.passages = torch.randint(1, cfg.vocab_size, (cfg.n_passages, cfg.seq_len), generator=g)
        self.passages[:, -3:] = 0
        noise = torch.randint(1, cfg.vocab_size, self.passages.shape, generator=g)
        keep = torch.rand(self.passages.shape, generator=g) < 0.6
        self.queries = torch.where(keep, self.passages, noise)
        self.gen = g

    def batch(self):
        ids = torch.randperm(self.cfg.n_passages, generator=self.gen)[: self.cfg.batch_size]
        hard_ids = (ids + 1) % self.cfg.n_passages
        return self.queries[ids], self.passages[ids], self.passages[hard_ids], ids
