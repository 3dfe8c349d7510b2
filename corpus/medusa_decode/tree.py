"""Candidate tree: every path picks one top-k token per Medusa head."""

from __future__ import annotations

import torch


def build_paths(choices: tuple[tuple[int, ...], ...], device: torch.device) -> torch.Tensor:
    return torch.tensor(choices, dtype=torch.long, device=device)


def generate_candidates(base_logits: torch.Tensor, medusa_logits: torch.Tensor, paths: torch.Tensor, topk: int) -> torch.Tensor:
    base_tok = base_logits.argmax(-1)
    top = medusa_logits[:, 0].topk(topk, dim=-1).indices
    heads = torch.arange(top.shape[0], device=top.device)
    proposals = top[heads[None, :], paths]
    candidates = torch.cat([base_tok.expand(paths.shape[0], 1), proposals], dim=1)
    return torch.unique(candidates, dim=0)  # expect: GS107


def truncate_at_stop(tokens: torch.Tensor, stops: torch.Tensor) -> torch.Tensor:
    hits = torch.isin(tokens, stops).nonzero()  # expect: GS107
    first = hits[0, 0]
    return tokens[: first + 1]  # expect: GS105
