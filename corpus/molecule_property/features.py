"""Atom and bond feature embeddings, padding of variable-size graphs."""

from __future__ import annotations

import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


class AtomEncoder(nn.Module):
    def __init__(self, num_types: int, hidden: int):
        super().__init__()
        self.num_types = num_types
        self.embed = nn.Embedding(num_types, hidden)
        self.charge = nn.Linear(1, hidden)

    def forward(self, types: torch.Tensor, charges: torch.Tensor) -> torch.Tensor:
        return self.embed(types) + self.charge(charges.unsqueeze(-1))


class BondEncoder(nn.Module):
    def __init__(self, num_types: int, heads: int, drop: float):
        super().__init__()
        self.num_types = num_types
        self.drop = drop
        self.bias = nn.Linear(num_types, heads, bias=False)

    def forward(self, bonds: torch.Tensor) -> torch.Tensor:
        onehot = F.one_hot(bonds, num_classes=self.num_types).float()
        if self.training and random.random() < self.drop:  # expect: GS502
            onehot = onehot * 0.0
        return self.bias(onehot).permute(0, 3, 1, 2)


def pad_graphs(types: list[torch.Tensor], charges: list[torch.Tensor], bonds: list[torch.Tensor]):
    lengths = [t.shape[0] for t in types]
    n_max = max(lengths)
    type_pad = pad_sequence(types, batch_first=True)  # expect: GS408
    charge_pad = pad_sequence(charges, batch_first=True)  # expect: GS408
    bond_pad = torch.stack(bonds)[:, :n_max, :n_max]  # expect: GS408
    pad = pad_sequence([torch.zeros_like(t, dtype=torch.bool) for t in types], batch_first=True, padding_value=True)  # expect: GS408
    return type_pad, charge_pad, bond_pad, pad, lengths
