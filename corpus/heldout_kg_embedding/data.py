"""A synthetic knowledge graph: relations are fixed permutations of the entities."""

from __future__ import annotations

from collections import defaultdict

import torch

from config import KGConfig


def make_graph(cfg: KGConfig, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    perms = [torch.randperm(cfg.n_entities, generator=g) for _ in range(cfg.n_relations)]
    heads = torch.randint(0, cfg.n_entities, (cfg.n_triples,), generator=g)
    rels = torch.randint(0, cfg.n_relations, (cfg.n_triples,), generator=g)
    tails = torch.stack([perms[int(r)][int(h)] for h, r in zip(heads, rels)])
    triples = torch.stack([heads, rels, tails], dim=1)
    n_test = cfg.n_triples // 10
    return triples[n_test:], triples[:n_test]


def true_tails(triples: torch.Tensor) -> dict[tuple[int, int], set[int]]:
    index: dict[tuple[int, int], set[int]] = defaultdict(set)
    for h, r, t in triples.tolist():
        index[(h, r)].add(t)
    return index
