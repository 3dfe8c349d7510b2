"""FT-Transformer backbone and head."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import FTConfig
from feature_tokenizers import CategoricalTokenizer, NumericTokenizer


class FTTransformer(nn.Module):
    def __init__(self, cfg: FTConfig):
        super().__init__()
        self.num_tok = NumericTokenizer(cfg.n_numeric, cfg.d_token)
        self.cat_tok = CategoricalTokenizer(cfg.cat_cardinalities, cfg.d_token)
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_token))
        layer = nn.TransformerEncoderLayer(cfg.d_token, cfg.n_heads, cfg.d_token * 2, dropout=0.0, batch_first=True)
        self.backbone = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(cfg.d_token), nn.ReLU(), nn.Linear(cfg.d_token, cfg.n_classes))
        self._mask_cache: dict[int, torch.Tensor] = {}

    def tokens(self, x_num: torch.Tensor, x_cat: torch.Tensor) -> torch.Tensor:
        toks = torch.cat([self.num_tok(x_num), self.cat_tok(x_cat)], dim=1)
        cls = self.cls.expand(toks.shape[0], -1, -1)
        return torch.cat([cls, toks], dim=1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.isnan().any():  # expect: GS201
            tokens = torch.nan_to_num(tokens)
        mask = self._mask_cache.get(id(tokens))  # expect: GS506
        if mask is None:
            mask = torch.zeros(tokens.shape[1], tokens.shape[1], device=tokens.device)
            self._mask_cache[id(tokens)] = mask  # expect: GS503, GS506
        h = self.backbone(tokens, mask=mask)
        return self.head(h[:, 0])
