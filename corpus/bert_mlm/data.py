"""Synthetic word corpus, sequence packing and collation (runs on the host)."""

from __future__ import annotations

import random

import torch

from config import MLMConfig


def synthetic_documents(n_docs: int, cfg: MLMConfig, seed: int) -> list[list[list[int]]]:
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        words = []
        for _ in range(rng.randint(3, 9)):
            words.append([rng.randrange(4, cfg.vocab_size) for _ in range(rng.randint(1, 3))])
        docs.append(words)
    return docs


def pack_documents(docs: list[list[list[int]]], cfg: MLMConfig) -> list[dict[str, torch.Tensor]]:
    """Greedy packing of whole documents into fixed-length rows."""
    rows = []
    ids, words, segs = [cfg.cls_id], [0], [0]
    word_idx, seg_idx = 1, 1
    for doc in docs:
        n_tokens = sum(len(w) for w in doc) + 1
        if len(ids) + n_tokens > cfg.max_len:
            rows.append(_finish(ids, words, segs, cfg))
            ids, words, segs = [cfg.cls_id], [0], [0]
            word_idx, seg_idx = 1, 1
        for word in doc:
            for tok in word:
                ids.append(tok)
                words.append(min(word_idx, cfg.max_words - 1))
                segs.append(seg_idx)
            word_idx += 1
        ids.append(cfg.sep_id)
        words.append(0)
        segs.append(seg_idx)
        seg_idx += 1
    rows.append(_finish(ids, words, segs, cfg))
    return rows


def _finish(ids, words, segs, cfg: MLMConfig) -> dict[str, torch.Tensor]:
    pad = cfg.max_len - len(ids)
    return {
        "input_ids": torch.tensor(ids[: cfg.max_len] + [cfg.pad_id] * pad),
        "word_ids": torch.tensor(words[: cfg.max_len] + [0] * pad),
        "segment_ids": torch.tensor(segs[: cfg.max_len] + [0] * pad),
    }
