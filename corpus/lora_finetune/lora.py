"""Low-rank adapters wrapped around frozen linear layers."""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn as nn


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float, device: torch.device):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.r = r
        self.scaling = alpha / r
        self.dropout = dropout
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.drop_gen = torch.Generator(device=device)
        self.drop_gen.manual_seed(1234)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        if self.training and self.dropout > 0.0:
            keep = torch.empty_like(x).bernoulli_(1.0 - self.dropout, generator=self.drop_gen)  # expect: GS601
            h = x * keep / (1.0 - self.dropout)
        return self.base(x) + (h @ self.lora_A.t() @ self.lora_B.t()) * self.scaling  # expect: GS301


def inject_lora(model: nn.Module, targets: tuple[str, ...], r: int, alpha: float, dropout: float, device: torch.device) -> list[LoRALinear]:
    adapters = []
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if child_name in targets and isinstance(child, nn.Linear):
                wrapped = LoRALinear(child, r, alpha, dropout, device)
                setattr(module, child_name, wrapped)
                adapters.append(wrapped)
    return adapters


@contextlib.contextmanager
def adapters_disabled(adapters: list[LoRALinear]):
    saved = [a.scaling for a in adapters]
    for a in adapters:
        a.scaling = 0.0
    try:
        yield
    finally:
        for a, s in zip(adapters, saved):
            a.scaling = s
