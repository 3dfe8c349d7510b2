import torch
import torch.nn as nn


class RewardModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.body = nn.Sequential(nn.Linear(cfg.dim, cfg.dim), nn.GELU(), nn.Linear(cfg.dim, cfg.dim))
        self.head = nn.Linear(cfg.dim, 1)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if tokens.dim() != 2:
            raise ValueError(f"expected (batch, seq) tokens, got {tuple(tokens.shape)}")
        h = self.body(self.embed(tokens))
        if mask is None:
            mask = torch.ones(tokens.shape, dtype=h.dtype, device=h.device)
        per_tok = self.head(h).squeeze(-1) * mask
        lengths = mask.sum(-1).clamp_min(1.0)
        rewards = per_tok.sum(-1) / lengths
        assert torch.isfinite(rewards).all(), "non-finite reward"  # expect: GS201
        return rewards
