from __future__ import annotations

import torch

from config import Request


class BatchSampler:
    """Temperature + nucleus sampling with per-request parameters."""

    def __init__(self, device: torch.device):
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(1234)

    def __call__(self, logits: torch.Tensor, requests: list[Request]) -> torch.Tensor:
        temps = torch.tensor([r.params.temperature for r in requests], device=logits.device)  # expect: GS402
        if (temps == 0).all():  # expect: GS201
            return logits.argmax(-1)
        top_p = [r.params.top_p for r in requests]
        top_ps = torch.as_tensor(top_p, device=logits.device)  # expect: GS402
        seeded = [r.params.seed for r in requests if r.params.seed is not None]
        if seeded:
            self.gen.manual_seed(seeded[0])  # expect: GS602
        probs = (logits / temps.clamp(min=1e-5)[:, None]).softmax(-1)
        sorted_probs, sorted_idx = probs.sort(dim=-1, descending=True)
        cum = sorted_probs.cumsum(-1)
        sorted_probs = sorted_probs.masked_fill(cum - sorted_probs > top_ps[:, None], 0.0)
        choice = torch.multinomial(sorted_probs, 1, generator=self.gen)  # expect: GS601
        return sorted_idx.gather(-1, choice).squeeze(-1)
