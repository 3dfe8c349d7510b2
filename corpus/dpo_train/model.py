"""A small causal LM used as policy and frozen reference."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import ModelConfig


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln = nn.LayerNorm(cfg.d_model)
        self.mix = nn.Linear(cfg.d_model, cfg.d_model)
        self.ff = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, h: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # causal running mean over the valid prefix (a cheap stand-in for attention)
        w = attention_mask.unsqueeze(-1).to(h.dtype)
        prefix = torch.cumsum(self.ln(h) * w, dim=1) / torch.cumsum(w, dim=1).clamp_min(1.0)
        scale = torch.tensor(h.shape[-1] ** -0.5, dtype=h.dtype, device=h.device)  # expect: GS402
        h = h + self.drop(self.mix(prefix)) * scale.sqrt()
        return h + self.drop(self.ff(self.ln(h)))


class TinyCausalLM(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if input_ids.dim() == 1:
            input_ids = input_ids.unsqueeze(0)
            attention_mask = attention_mask.unsqueeze(0)
        h = self.embed(input_ids)
        for block in self.blocks:
            h = block(h, attention_mask)
        return self.lm_head(self.norm(h))


def make_reference(policy: TinyCausalLM) -> TinyCausalLM:
    ref = copy.deepcopy(policy)
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def concatenated_forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Runs chosen and rejected sequences in one forward pass."""
    ids = torch.cat([batch["chosen_ids"], batch["rejected_ids"]], dim=0)
    mask = torch.cat([batch["chosen_mask"], batch["rejected_mask"]], dim=0)
    logits = model(ids, attention_mask=mask)
    n = batch["chosen_ids"].shape[0]
    return logits[:n], logits[n:]


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    logp = F.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)
