"""Replay of self-play examples."""

from __future__ import annotations

from collections import deque

import torch
from torch.utils.data import Dataset


class ReplayBuffer(Dataset):
    def __init__(self, capacity: int):
        self.items: deque = deque(maxlen=capacity)

    def extend(self, examples) -> None:
        self.items.extend(examples)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, idx: int):
        state, pi, z, legal = self.items[idx]
        return state, pi.float(), z.float(), legal
