"""Synthetic tagged sentences and padding into batches (host side, outside the step)."""

from __future__ import annotations

import random

import torch

from config import NERConfig


def make_corpus(cfg: NERConfig, n: int, seed: int) -> list[tuple[list[int], list[list[int]], list[int]]]:
    rng = random.Random(seed)
    sents = []
    for _ in range(n):
        length = rng.randint(3, 9)
        words = [rng.randint(2, cfg.word_vocab - 1) for _ in range(length)]
        chars = [[rng.randint(1, cfg.char_vocab - 1) for _ in range(rng.randint(1, cfg.max_word_len))] for _ in words]
        tags, i = [], 0
        while i < length:
            w = words[i]
            if w % 5 == 0 and i + 1 < length:
                kind = 1 + 2 * (w % 3)
                tags += [kind, kind + 1]
                i += 2
            else:
                tags.append(0)
                i += 1
        sents.append((words, chars, tags[:length]))
    return sents


def collate(batch, cfg: NERConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
    lengths = [len(w) for w, _, _ in batch]
    max_len = max(lengths)
    words = torch.full((len(batch), max_len), cfg.pad_idx, dtype=torch.long)
    chars = torch.zeros(len(batch), max_len, cfg.max_word_len, dtype=torch.long)
    tags = torch.zeros(len(batch), max_len, dtype=torch.long)
    for b, (w, c, t) in enumerate(batch):
        words[b, : len(w)] = torch.tensor(w)
        tags[b, : len(t)] = torch.tensor(t)
        for i, cw in enumerate(c):
            chars[b, i, : len(cw)] = torch.tensor(cw)
    return words, chars, tags, lengths


def batches(corpus, cfg: NERConfig, shuffle: bool, rng: random.Random):
    order = list(range(len(corpus)))
    if shuffle:
        rng.shuffle(order)
    for start in range(0, len(order), cfg.batch_size):
        yield collate([corpus[i] for i in order[start : start + cfg.batch_size]], cfg)
