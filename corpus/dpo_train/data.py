"""Synthetic preference pairs: right-padded chosen/rejected continuations of shared prompts."""

from __future__ import annotations

import torch

from config import DPOConfig


def make_pairs(cfg: DPOConfig, num_batches: int, seed: int) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    B, T, V = cfg.batch_size, cfg.seq_len, cfg.model.vocab_size
    for _ in range(num_batches):
        batch = {}
        for name in ("chosen", "rejected"):
            ids = torch.randint(1, V, (B, T), generator=g)
            lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
            mask = (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)).long()
            batch[f"{name}_ids"] = ids * mask + cfg.model.pad_token_id * (1 - mask)
            batch[f"{name}_mask"] = mask
        out.append(batch)
    return out
