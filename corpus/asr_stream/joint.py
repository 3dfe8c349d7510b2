from __future__ import annotations

import torch
import torch.nn as nn

from config import ASRConfig


class Predictor(nn.Module):
    def __init__(self, cfg: ASRConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.cell = nn.GRUCell(cfg.d_model, cfg.d_model)

    def forward(self, tokens: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = self.cell(self.embed(tokens), state)
        return state, state


class Joiner(nn.Module):
    def __init__(self, cfg: ASRConfig):
        super().__init__()
        self.enc_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.pred_proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, f: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.enc_proj(f) + self.pred_proj(g)))
