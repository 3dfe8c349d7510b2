"""Synthetic prompts of varying length, padded on the host."""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import pad_sequence

from tokenizer import CharTokenizer


def sample_prompts(tok: CharTokenizer, n: int, max_len: int, generator: torch.Generator) -> list[torch.Tensor]:
    prompts = []
    for _ in range(n):
        length = int(torch.randint(2, max_len + 1, (1,), generator=generator))
        body = torch.randint(tok.offset, tok.vocab_size, (length - 1,), generator=generator)
        prompts.append(torch.cat([torch.tensor([tok.bos_id]), body]))
    return prompts


def collate(prompts: list[torch.Tensor], pad_id: int, max_len: int) -> tuple[torch.Tensor, list[int]]:
    lens = [len(p) for p in prompts]
    ids = pad_sequence(prompts, batch_first=True, padding_value=pad_id)
    if ids.shape[1] < max_len:
        ids = torch.cat([ids, ids.new_full((ids.shape[0], max_len - ids.shape[1]), pad_id)], dim=1)
    return ids, lens
