"""Packs short random documents into fixed-length rows with a loss mask over answers."""

from __future__ import annotations

import torch


def pack_documents(n_rows: int, row_len: int, vocab: int, gen: torch.Generator) -> list[dict]:
    rows = []
    for _ in range(n_rows):
        lens = []
        remaining = row_len
        while remaining > 0:
            n = min(remaining, int(torch.randint(4, 10, (1,), generator=gen)))
            lens.append(n)
            remaining -= n
        tokens = torch.randint(1, vocab, (row_len + 1,), generator=gen)
        mask = torch.zeros(row_len, dtype=torch.long)
        start = 0
        for n in lens:
            mask[start + n // 2 : start + n] = 1
            start += n
        rows.append({"input_ids": tokens[:-1], "labels": tokens[1:], "loss_mask": mask, "seq_lens": lens})
    return rows


def micro_batches(rows: list[dict], micro_batch: int) -> list[dict]:
    out = []
    for i in range(0, len(rows) - micro_batch + 1, micro_batch):
        chunk = rows[i : i + micro_batch]
        out.append({
            "input_ids": torch.stack([r["input_ids"] for r in chunk]),
            "labels": torch.stack([r["labels"] for r in chunk]),
            "loss_mask": torch.stack([r["loss_mask"] for r in chunk]),
            "seq_lens": chunk[0]["seq_lens"],
        })
    return out
