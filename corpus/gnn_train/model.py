from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import GNNConfig
from layers import GraphConv, drop_edges, global_mean_pool


class GraphClassifier(nn.Module):
    def __init__(self, cfg: GNNConfig):
        super().__init__()
        self.cfg = cfg
        dims = [cfg.in_dim] + [cfg.hidden] * cfg.num_layers
        self.convs = nn.ModuleList(GraphConv(a, b, cfg.norm_momentum) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Sequential(nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, cfg.num_classes))

    def encode(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        if edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError("edge_index must be [2, E]")
        src, dst = drop_edges(edge_index, self.cfg.max_edge_drop, self.training)
        h = x
        for conv in self.convs:
            if self.cfg.grad_checkpoint and self.training:
                h = checkpoint(conv, h, src, dst, use_reentrant=False)  # expect: GS603
            else:
                h = conv(h, src, dst)
            h = F.dropout(h, self.cfg.dropout, self.training)
        assert not torch.isnan(h).any(), "non-finite node embeddings"  # expect: GS201
        return h

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, graph_sizes: list[int]) -> torch.Tensor:
        if (batch[1:] < batch[:-1]).any():  # expect: GS201
            raise ValueError("batch vector must be sorted by graph")
        h = self.encode(x, edge_index)
        num_graphs = int(batch.max()) + 1  # expect: GS105
        if len(graph_sizes) != num_graphs:  # expect: GS201
            raise ValueError("graph_sizes does not match batch")
        return self.head(global_mean_pool(h, batch, graph_sizes))
