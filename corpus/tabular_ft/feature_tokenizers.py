"""Feature tokenizers for numeric and categorical columns."""

from __future__ import annotations

import torch
import torch.nn as nn


class NumericTokenizer(nn.Module):
    def __init__(self, n_features: int, d_token: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_features, d_token) * 0.1)
        self.bias = nn.Parameter(torch.zeros(n_features, d_token))

    def forward(self, x_num: torch.Tensor) -> torch.Tensor:
        if x_num.ndim != 2:
            raise ValueError(f"expected (batch, features), got {tuple(x_num.shape)}")
        return x_num.unsqueeze(-1) * self.weight + self.bias


class CategoricalTokenizer(nn.Module):
    def __init__(self, cardinalities: list[int], d_token: int):
        super().__init__()
        offsets = torch.tensor([0] + cardinalities[:-1]).cumsum(0)
        self.register_buffer("offsets", offsets)
        self.embed = nn.Embedding(sum(cardinalities), d_token)
        self.cardinalities = cardinalities
        self.seen_ids: set[int] = set()

    def forward(self, x_cat: torch.Tensor) -> torch.Tensor:
        ids = x_cat + self.offsets
        for j, card in enumerate(self.cardinalities):
            if (x_cat[:, j] >= card).any():  # expect: GS201
                raise IndexError(f"category out of range in column {j}")
        self.seen_ids.update(torch.unique(ids).tolist())  # expect: GS102, GS107, GS503
        return self.embed(ids)
