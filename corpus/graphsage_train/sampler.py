from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class SampledBlock:
    nodes: torch.Tensor
    edges: list
    frontier_sizes: list
    seeds: torch.Tensor
    labels: torch.Tensor


class NeighborSampler:
    def __init__(self, n_nodes: int, avg_degree: int, fanouts: list, gen: torch.Generator):
        self.fanouts = fanouts
        self.gen = gen
        src = torch.randint(0, n_nodes, (n_nodes * avg_degree,), generator=gen)
        dst = torch.randint(0, n_nodes, (n_nodes * avg_degree,), generator=gen)
        order = torch.argsort(dst)
        self.src, self.dst = src[order], dst[order]
        self.indptr = torch.zeros(n_nodes + 1, dtype=torch.long)
        self.indptr[1:] = torch.cumsum(torch.bincount(self.dst, minlength=n_nodes), 0)

    def neighbours(self, node: int, k: int) -> list:
        lo, hi = int(self.indptr[node]), int(self.indptr[node + 1])
        if hi == lo:
            return []
        pick = torch.randint(lo, hi, (k,), generator=self.gen)
        return self.src[pick].tolist()

    def sample(self, seeds: torch.Tensor, labels: torch.Tensor) -> SampledBlock:
        frontier = seeds.tolist()
        all_nodes = list(frontier)
        edges, sizes = [], [len(frontier)]
        for k in self.fanouts:
            src, dst = [], []
            for v in frontier:
                for u in self.neighbours(v, k):
                    src.append(u)
                    dst.append(v)
            frontier = sorted(set(src))
            all_nodes.extend(frontier)
            sizes.append(len(frontier))
            edges.append((torch.tensor(src, dtype=torch.long), torch.tensor(dst, dtype=torch.long)))
        return SampledBlock(torch.tensor(all_nodes), edges, sizes, seeds, labels[seeds])
