"""RotatE: entities are complex vectors, relations rotate them (a phase per dimension)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


class RotatE(nn.Module):
    def __init__(self, n_entities: int, n_relations: int, dim: int, gamma: float, epsilon: float):
        super().__init__()
        self.dim = dim
        self.gamma = gamma
        self.embedding_range = (gamma + epsilon) / dim
        r = self.embedding_range
        self.entity = nn.Parameter(torch.empty(n_entities, 2 * dim).uniform_(-r, r))
        self.relation = nn.Parameter(torch.empty(n_relations, dim).uniform_(-r, r))
        self._row_index: dict[int, torch.Tensor] = {}

    def batch_rows(self, triples: torch.Tensor) -> torch.Tensor:
        key = id(triples)  # expect: GS506
        if key not in self._row_index:
            self._row_index[key] = torch.arange(triples.shape[0], device=triples.device)  # expect: GS503
        return self._row_index[key]

    def rotate(self, head: torch.Tensor, rel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        phase = rel / (self.embedding_range / math.pi)
        if self.training and (phase.abs() > 4 * math.pi).any():  # expect: GS201
            phase = torch.remainder(phase + math.pi, 2 * math.pi) - math.pi
        re_h, im_h = head.chunk(2, dim=-1)
        re_r, im_r = phase.cos(), phase.sin()
        return re_h * re_r - im_h * im_r, re_h * im_r + im_h * re_r

    def distance(self, re: torch.Tensor, im: torch.Tensor, tail: torch.Tensor) -> torch.Tensor:
        re_t, im_t = tail.chunk(2, dim=-1)
        return self.gamma - torch.stack([re - re_t, im - im_t], dim=0).norm(dim=0).sum(-1)

    def forward(self, triples: torch.Tensor) -> torch.Tensor:
        rows = self.batch_rows(triples)
        head = self.entity[triples[rows, 0]]
        re, im = self.rotate(head, self.relation[triples[:, 1]])
        return self.distance(re, im, self.entity[triples[:, 2]])

    def score_negatives(self, pos: torch.Tensor, neg: torch.Tensor, mode: str) -> torch.Tensor:
        rel = self.relation[pos[:, 1]].unsqueeze(1)
        if mode == "tail-batch":
            re, im = self.rotate(self.entity[pos[:, 0]].unsqueeze(1), rel)
            return self.distance(re, im, self.entity[neg])
        re_t, im_t = self.entity[pos[:, 2]].unsqueeze(1).chunk(2, dim=-1)
        phase = rel / (self.embedding_range / math.pi)
        re_r, im_r = phase.cos(), phase.sin()
        re, im = re_t * re_r + im_t * im_r, im_t * re_r - re_t * im_r
        return self.distance(re, im, self.entity[neg])

    def n3_norm(self) -> torch.Tensor:
        return self.entity.abs().pow(3).sum() / self.entity.shape[0]
