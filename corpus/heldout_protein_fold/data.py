"""Synthetic protein batches: a random-walk backbone and a noisy MSA around its sequence."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from config import ModelConfig


@dataclass
class ProteinBatch:
    msa: torch.Tensor
    aatype: torch.Tensor
    coords: torch.Tensor
    mask: torch.Tensor


def make_batch(cfg: ModelConfig, gen: torch.Generator) -> ProteinBatch:
    b, r, s = cfg.batch_size, cfg.n_res, cfg.n_seq
    aatype = torch.randint(0, 20, (b, r), generator=gen)
    steps = torch.randn(b, r, 3, generator=gen)
    steps = 3.8 * steps / steps.norm(dim=-1, keepdim=True)
    coords = torch.cumsum(steps, dim=1)
    mutate = torch.rand(b, s, r, generator=gen) < 0.2
    msa = torch.where(mutate, torch.randint(0, 21, (b, s, r), generator=gen), aatype[:, None, :].expand(b, s, r))
    mask = torch.ones(b, r)
    mask[:, -1] = (torch.rand(b, generator=gen) > 0.5).float()
    return ProteinBatch(msa=msa, aatype=aatype, coords=coords, mask=mask)
