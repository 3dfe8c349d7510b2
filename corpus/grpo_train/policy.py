"""A small causal transformer used as policy and reference model."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import PolicyConfig


class CausalLM(nn.Module):
    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, 2 * cfg.d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if input_ids.dim() == 1:
            input_ids = input_ids[None]
        T = input_ids.shape[1]
        pos = torch.arange(T, device=input_ids.device)
        h = self.tok_emb(input_ids) + self.pos_emb(pos)[None]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=input_ids.device), diagonal=1)
        h = self.blocks(h, mask=causal)
        return self.lm_head(self.ln_f(h))


def token_logprobs(model: nn.Module, input_ids: torch.Tensor, n_completion: int) -> torch.Tensor:
    logits = model(input_ids)[:, -n_completion - 1:-1, :]
    targets = input_ids[:, -n_completion:]
    return torch.gather(logits.log_softmax(-1), 2, targets.unsqueeze(-1)).squeeze(-1)
