"""Graph transformer with scatter-based readout."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from config import MolConfig
from features import AtomEncoder, BondEncoder


class GraphLayer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))
        self.n1 = nn.LayerNorm(hidden)
        self.n2 = nn.LayerNorm(hidden)

    def forward(self, h: torch.Tensor, bias: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        b, n, d = h.shape
        q, k, v = self.qkv(self.n1(h)).view(b, n, 3, self.heads, d // self.heads).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / (d // self.heads) ** 0.5 + bias
        scores = scores.masked_fill(pad[:, None, None, :], -1e4)
        attn = scores.softmax(-1)
        h = h + self.out(torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(b, n, d))
        return h + self.ff(self.n2(h))


class MolTransformer(nn.Module):
    def __init__(self, cfg: MolConfig):
        super().__init__()
        self.cfg = cfg
        self.atoms = AtomEncoder(cfg.num_atom_types, cfg.hidden)
        self.bonds = BondEncoder(cfg.num_bond_types, cfg.heads, cfg.bond_dropout)
        self.layers = nn.ModuleList(GraphLayer(cfg.hidden, cfg.heads) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.hidden, cfg.num_targets)

    def forward(self, types, charges, bonds, pad):
        h = self.atoms(types, charges)
        bias = self.bonds(bonds)
        for layer in self.layers:
            if self.cfg.checkpoint_layers and self.training:
                h = checkpoint(layer, h, bias, pad, use_reentrant=False, preserve_rng_state=False)
            else:
                h = layer(h, bias, pad)
        return h


def scatter_mean(node_h: torch.Tensor, graph_idx: torch.Tensor, num_graphs: int) -> torch.Tensor:
    out = node_h.new_zeros(num_graphs, node_h.shape[-1])
    out.index_add_(0, graph_idx, node_h)
    counts = torch.bincount(graph_idx, minlength=num_graphs)  # expect: GS107
    return out / counts.clamp(min=1).unsqueeze(-1).to(out.dtype)


def readout(h: torch.Tensor, pad: torch.Tensor, head: nn.Module) -> torch.Tensor:
    b = h.shape[0]
    if not pad.any():  # expect: GS201
        return head(h.mean(1))
    keep = ~pad
    node_h = h[keep]  # expect: GS108
    graph_idx = torch.arange(b, device=h.device)[:, None].expand_as(pad)[keep]  # expect: GS108
    return head(scatter_mean(node_h, graph_idx, b))
