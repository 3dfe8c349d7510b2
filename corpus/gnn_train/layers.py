from __future__ import annotations

import random

import torch
import torch.nn as nn
import torch.nn.functional as F


def scatter_sum(src: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    out = src.new_zeros(dim_size, src.shape[-1])
    return out.index_add_(0, index, src)


def drop_edges(edge_index: torch.Tensor, max_p: float, training: bool) -> tuple[torch.Tensor, torch.Tensor]:
    src, dst = edge_index[0], edge_index[1]
    if not training or max_p <= 0.0:
        return src, dst
    p = random.uniform(0.0, max_p)  # expect: GS502
    keep = torch.rand(src.shape[0], device=src.device) >= p  # expect: GS301 (a host draw's number, frozen where it enters device work)
    return src[keep], dst[keep]  # expect: GS108


def global_mean_pool(h: torch.Tensor, batch: torch.Tensor, graph_sizes: list[int]) -> torch.Tensor:
    pooled = h.new_zeros(len(graph_sizes), h.shape[-1])  # expect: GS408
    pooled.index_add_(0, batch, h)
    counts = torch.bincount(batch)  # expect: GS107
    return pooled / counts.clamp(min=1).unsqueeze(-1).to(h.dtype)


class GraphConv(nn.Module):
    """Mean-aggregation message passing with a self connection."""

    def __init__(self, dim_in: int, dim_out: int, momentum: float):
        super().__init__()
        self.lin_msg = nn.Linear(dim_in, dim_out)
        self.lin_self = nn.Linear(dim_in, dim_out)
        self.momentum = momentum
        self.register_buffer("running_deg", torch.ones(()))
        self._norm_cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def degree_norm(self, dst: torch.Tensor, num_nodes: int) -> torch.Tensor:
        key = id(dst)  # expect: GS506
        if key not in self._norm_cache:
            deg = torch.zeros(num_nodes, device=dst.device).index_add_(0, dst, torch.ones_like(dst, dtype=torch.float))
            self._norm_cache = {key: (dst, deg.clamp(min=1.0).reciprocal())}
        return self._norm_cache[key][1]

    def forward(self, h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        num_nodes = h.shape[0]
        msg = scatter_sum(self.lin_msg(h)[src], dst, num_nodes)
        inv_deg = self.degree_norm(dst, num_nodes)
        if self.training:
            self.running_deg = self.momentum * self.running_deg + (1 - self.momentum) * inv_deg.mean()  # expect: GS401
        return F.relu(msg * inv_deg.unsqueeze(-1) + self.lin_self(h))
