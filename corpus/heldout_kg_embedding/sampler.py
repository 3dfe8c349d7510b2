"""Uniform negative sampling of heads or tails, avoiding the positive entity itself."""

from __future__ import annotations

import torch


class NegativeSampler:
    def __init__(self, n_entities: int, num_negatives: int, device: torch.device, seed: int):
        self.n_entities = n_entities
        self.k = num_negatives
        self.device = device
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(seed)

    def reset(self, seed: int) -> None:
        self.gen.manual_seed(seed)  # expect: GS602

    def sample(self, pos: torch.Tensor, mode: str) -> torch.Tensor:
        ids = torch.randint(0, self.n_entities, (pos.shape[0], self.k), generator=self.gen, device=pos.device)  # expect: GS601
        col = 2 if mode == "tail-batch" else 0
        true = pos[:, col : col + 1]
        while (ids == true).any():  # expect: GS201
            ids = torch.where(ids == true, (ids + 1) % self.n_entities, ids)
        return ids
