"""A top-2 mixture-of-experts layer written like the Hugging Face Mixtral block: a router,
per-expert MLPs, and a Python loop over the experts that received tokens."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Router(nn.Module):
    def __init__(self, dim: int, n_experts: int, top_k: int, jitter: float = 0.0):
        super().__init__()
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.n_experts = n_experts
        self.top_k = top_k
        self.jitter = jitter

    def forward(self, x: torch.Tensor):
        if self.training and self.jitter > 0:
            x = x * torch.empty_like(x).uniform_(1.0 - self.jitter, 1.0 + self.jitter)
        logits = self.gate(x)
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        assert torch.allclose(weights.sum(dim=-1), torch.ones_like(weights[:, 0]), atol=1e-4)  # expect: GS109
        # switch-transformer load-balancing loss
        top1 = F.one_hot(experts[:, 0]).float()  # expect: GS107
        aux = self.n_experts * (top1.mean(dim=0) * probs[:, : top1.shape[1]].mean(dim=0)).sum()
        z_loss = torch.logsumexp(logits, dim=-1).pow(2).mean()
        return weights.to(x.dtype), experts, aux + 1e-3 * z_loss


class SparseMoE(nn.Module):
    def __init__(self, dim: int, hidden: int, n_experts: int = 4, top_k: int = 2, capacity_warn: float = 2.0):
        super().__init__()
        self.router = Router(dim, n_experts, top_k, jitter=0.01)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(n_experts))
        self.n_experts = n_experts
        self.capacity_warn = capacity_warn
        self.overflow_events = 0

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None = None):
        B, T, D = hidden.shape
        flat = hidden.view(-1, D)
        keep = mask.reshape(-1) if mask is not None else None
        tokens = flat[keep] if keep is not None else flat  # expect: GS108
        weights, experts, aux = self.router(tokens)
        tokens_per_expert = torch.bincount(experts.flatten(), minlength=self.n_experts)  # expect: GS107
        busiest = int(tokens_per_expert.max())  # expect: GS105
        if busiest > self.capacity_warn * tokens.shape[0] * experts.shape[1] / self.n_experts:  # expect: GS201
            self.overflow_events += 1  # expect: GS302
        out = torch.zeros_like(tokens)
        expert_mask = F.one_hot(experts, num_classes=self.n_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()  # expect: GS107
        for expert_idx in expert_hit:  # expect: GS201
            expert = self.experts[expert_idx]  # expect: GS105
            slot, token_idx = torch.where(expert_mask[expert_idx].squeeze(0))  # expect: GS107
            y = expert(tokens[token_idx]) * weights[token_idx, slot, None]
            out.index_add_(0, token_idx, y)
        if keep is not None:
            full = torch.zeros_like(flat)
            full[keep] = out  # expect: GS108
            out = full
        return out.view(B, T, D), aux
