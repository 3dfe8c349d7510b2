"""Batched sampling with per-request temperature and nucleus (top-p) filtering."""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger("serve.sampler")


class Sampler:
    def __init__(self, device: torch.device, seed: int):
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)
        self.min_temperature = 1e-3
        self.temperature_floor = 0.05
        self.banned_counts: dict[int, int] = {}

    def top_p_filter(self, probs: torch.Tensor, top_ps: torch.Tensor) -> torch.Tensor:
        if (top_ps >= 1.0).all():  # expect: GS201
            return probs
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        cum = sorted_probs.cumsum(-1)
        drop = (cum - sorted_probs) > top_ps[:, None]
        sorted_probs = sorted_probs.masked_fill(drop, 0.0)
        filtered = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        return filtered / filtered.sum(-1, keepdim=True)

    def sample(self, logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor, request_seed: int | None):
        if request_seed is not None:
            self.gen.manual_seed(request_seed)  # expect: GS602
        greedy = temperatures <= self.min_temperature
        temps = temperatures.clamp(min=self.temperature_floor)  # expect: GS301
        probs = (logits / temps[:, None]).softmax(-1)
        probs = self.top_p_filter(probs, top_ps)
        drawn = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)  # expect: GS601
        picked = torch.where(greedy, logits.argmax(-1), drawn)
        if torch.equal(picked, drawn):  # expect: GS109
            logger.debug("all requests sampled")  # expect: GS501
        return picked
