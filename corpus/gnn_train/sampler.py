"""Synthetic graph batches and neighbour sampling (host side, runs before each step)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from config import GNNConfig


@dataclass
class GraphBatch:
    x: torch.Tensor
    edge_index: torch.Tensor
    batch: torch.Tensor
    y: torch.Tensor
    graph_sizes: list[int]

    def to(self, device: torch.device) -> "GraphBatch":
        return GraphBatch(
            self.x.to(device),
            self.edge_index.to(device),
            self.batch.to(device),
            self.y.to(device),
            list(self.graph_sizes),
        )


class NeighbourSampler:
    def __init__(self, cfg: GNNConfig, seed: int):
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.gen = torch.Generator().manual_seed(seed)

    def _sample_neighbours(self, n: int) -> list[tuple[int, int]]:
        edges = []
        for v in range(n):
            for u in self.rng.sample(range(n), k=min(self.cfg.fanout, n)):
                if u != v:
                    edges.append((u, v))
        return edges

    def next_batch(self) -> GraphBatch:
        xs, srcs, dsts, owners, labels, sizes = [], [], [], [], [], []
        offset = 0
        for g in range(self.cfg.graphs_per_batch):
            n = self.cfg.nodes_per_graph
            feats = torch.randn(n, self.cfg.in_dim, generator=self.gen)
            edges = self._sample_neighbours(n)
            xs.append(feats)
            srcs.extend(offset + u for u, _ in edges)
            dsts.extend(offset + v for _, v in edges)
            owners.extend([g] * n)
            labels.append(int(feats.sum().item() > 0) + int(feats[:, 0].mean().item() > 0.2))
            sizes.append(n)
            offset += n
        return GraphBatch(
            x=torch.cat(xs),
            edge_index=torch.tensor([srcs, dsts], dtype=torch.long),
            batch=torch.tensor(owners, dtype=torch.long),
            y=torch.tensor(labels, dtype=torch.long),
            graph_sizes=sizes,
        )
