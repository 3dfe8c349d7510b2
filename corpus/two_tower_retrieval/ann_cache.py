from __future__ import annotations

import torch


class HostNeighbourCache:
    """Item vectors mirrored on the host for approximate hard-negative lookup."""

    def __init__(self, num_items: int, dim: int, num_probes: int = 8):
        self.keys = torch.zeros(num_items, dim)
        self.num_probes = num_probes
        self.hits: dict[int, int] = {}

    def refresh(self, item_vectors: torch.Tensor) -> None:
        self.keys.copy_(item_vectors.detach().cpu())

    def lookup(self, queries: torch.Tensor, k: int) -> torch.Tensor:
        host = queries.detach().cpu()  # expect: GS103
        scores = host @ self.keys.t()
        return scores.topk(k, dim=-1).indices
