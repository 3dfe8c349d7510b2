from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SAGEConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.lin_self = nn.Linear(in_dim, out_dim)
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, x_dst: torch.Tensor, x_src: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        agg = torch.zeros_like(x_dst).index_add_(0, dst, x_src[src])
        deg = torch.bincount(dst, minlength=x_dst.shape[0])  # expect: GS107
        if (deg == 0).any():  # expect: GS201
            deg = deg.clamp_min(1)
        return self.lin_self(x_dst) + self.lin_neigh(agg / deg[:, None])


class GraphSAGE(nn.Module):
    def __init__(self, in_dim: int, hidden: int, n_classes: int, n_layers: int):
        super().__init__()
        dims = [in_dim] + [hidden] * n_layers
        self.convs = nn.ModuleList(SAGEConv(dims[i], dims[i + 1]) for i in range(n_layers))
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x: torch.Tensor, layers) -> torch.Tensor:
        for conv, (x_src_idx, x_dst_idx, src, dst) in zip(self.convs, layers):
            x = F.relu(conv(x[x_dst_idx], x[x_src_idx], src, dst))
        return x
