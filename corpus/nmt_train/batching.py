from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.nn.utils.rnn import pad_sequence


@dataclass
class MicroBatch:
    src_seqs: list[torch.Tensor]
    tgt_seqs: list[torch.Tensor]
    references: list[list[int]] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return sum(len(t) for t in self.tgt_seqs)


def _make_batch(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> MicroBatch:
    return MicroBatch([s for s, _ in pairs], [t for _, t in pairs], [t.tolist() for _, t in pairs])


def token_batches(pairs: list[tuple[torch.Tensor, torch.Tensor]], max_tokens: int) -> list[MicroBatch]:
    pairs = sorted(pairs, key=lambda p: (len(p[0]), len(p[1])))
    batches, cur, longest = [], [], 0
    for src, tgt in pairs:
        longest = max(longest, len(src), len(tgt))
        if cur and longest * (len(cur) + 1) > max_tokens:
            batches.append(_make_batch(cur))
            cur, longest = [], max(len(src), len(tgt))
        cur.append((src, tgt))
    if cur:
        batches.append(_make_batch(cur))
    return batches


def collate(seqs: list[torch.Tensor], pad: int) -> torch.Tensor:
    return pad_sequence(seqs, batch_first=True, padding_value=pad)  # expect: GS408


def trim_to_longest(tokens: torch.Tensor, lengths: list[int]) -> torch.Tensor:
    return tokens[:, : max(lengths)]  # expect: GS408
