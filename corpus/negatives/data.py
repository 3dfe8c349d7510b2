"""A CPU data pipeline. It syncs freely (`.item()`, `.tolist()`, `if` on tensors): these are CPU
tensors, run before the batch is copied into the static buffers, and no capture region reaches it."""

from __future__ import annotations

import random

import torch


def make_dataset(n: int, vocab_size: int, max_len: int, n_classes: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        length = rng.randint(3, max_len)
        toks = torch.randint(1, vocab_size, (length,), generator=gen)
        label = int(toks.sum().item()) % n_classes  # labels from a simple rule: learnable
        examples.append((toks, label))
    return examples


def collate(batch, max_len: int, pad_id: int = 0):
    tokens = torch.full((len(batch), max_len), pad_id, dtype=torch.long)
    labels = torch.empty(len(batch), dtype=torch.long)
    for i, (toks, label) in enumerate(batch):
        n = min(toks.numel(), max_len)
        tokens[i, :n] = toks[:n]
        labels[i] = label
    if (tokens == pad_id).all():
        raise ValueError("empty batch")
    lengths = (tokens != pad_id).sum(dim=1)
    stats = {"max_len": lengths.max().item(), "lengths": lengths.tolist()}
    return tokens, labels, stats


def batches(examples, batch_size: int, max_len: int, seed: int):
    rng = random.Random(seed)
    while True:
        order = list(range(len(examples)))
        rng.shuffle(order)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            yield collate([examples[j] for j in order[start : start + batch_size]], max_len)
