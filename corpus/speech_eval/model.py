"""A tiny CTC acoustic model: strided conv subsampling and depthwise-conv blocks over padded frames."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, dim: int, kernel: int = 5):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.dw = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        h = self.norm(x).masked_fill(pad[..., None], 0.0)
        h = self.dw(h.transpose(1, 2)).transpose(1, 2)
        return x + self.ff(h)


class CTCModel(nn.Module):
    def __init__(self, n_mels: int = 16, dim: int = 32, vocab: int = 12, n_blocks: int = 2):
        super().__init__()
        self.subsample = nn.Conv1d(n_mels, dim, kernel_size=3, stride=2, padding=1)
        self.blocks = nn.ModuleList(ConvBlock(dim) for _ in range(n_blocks))
        self.out = nn.Linear(dim, vocab)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor):
        """feats: (B, T, n_mels) padded; lengths: (B,) valid frames. Returns log-probs and output lengths."""
        max_len = int(lengths.max())  # expect: GS105
        feats = feats[:, :max_len]  # trim the batch to its longest utterance  # expect: GS301
        x = F.gelu(self.subsample(feats.transpose(1, 2))).transpose(1, 2)
        out_lens = (lengths - 1) // 2 + 1
        pad = torch.arange(x.size(1), device=x.device)[None, :] >= out_lens[:, None]
        for block in self.blocks:
            x = block(x, pad)
        return F.log_softmax(self.out(x), dim=-1), out_lens
