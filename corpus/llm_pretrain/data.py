"""A synthetic token stream with learnable structure, served in fixed-size windows."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset


class SyntheticTokens(Dataset):
    def __init__(self, vocab_size: int, seq_len: int, n_windows: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(1, vocab_size, (n_windows, 1), generator=g)
        stride = torch.randint(1, 4, (n_windows, 1), generator=g)
        pos = torch.arange(seq_len + 1)[None, :]
        self.tokens = 1 + (start + stride * pos) % (vocab_size - 1)

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        window = self.tokens[i]
        return window[:-1], window[1:]
