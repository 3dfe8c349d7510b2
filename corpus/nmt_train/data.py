from __future__ import annotations

import torch

from batching import MicroBatch, token_batches
from config import NMTConfig


def synthetic_parallel(cfg: NMTConfig, num_pairs: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(num_pairs):
        n = int(torch.randint(3, cfg.max_len - 1, (1,), generator=g))
        body = torch.randint(3, cfg.src_vocab, (n,), generator=g)
        src = torch.cat([body, torch.tensor([cfg.eos])])
        tgt = torch.cat([(body.flip(0) % (cfg.tgt_vocab - 3)) + 3, torch.tensor([cfg.eos])])
        pairs.append((src, tgt))
    return pairs


def update_groups(cfg: NMTConfig, steps: int, seed: int) -> list[list[MicroBatch]]:
    groups = []
    for i in range(steps):
        pairs = synthetic_parallel(cfg, 6 + 3 * (i % 2), seed * 1000 + i)
        groups.append(token_batches(pairs, cfg.max_tokens))
    return groups
