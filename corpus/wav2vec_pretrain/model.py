from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import Wav2VecConfig


class ConvFeatureEncoder(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        spec = [(10, 5), (3, 2), (3, 2)]
        layers = []
        in_ch = 1
        for kernel, stride in spec:
            layers += [nn.Conv1d(in_ch, channels, kernel, stride, bias=False), nn.GELU()]
            in_ch = channels
        self.conv = nn.Sequential(*layers)
        self.norm = nn.GroupNorm(channels, channels)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        if wav.dim() == 2:
            wav = wav.unsqueeze(1)
        assert torch.isfinite(wav).all(), "non-finite audio in batch"  # expect: GS201
        feats = self.norm(self.conv(wav))
        return feats.transpose(1, 2)


class GumbelQuantizer(nn.Module):
    def __init__(self, dim: int, groups: int, num_vars: int, out_dim: int):
        super().__init__()
        self.groups = groups
        self.num_vars = num_vars
        self.proj = nn.Linear(dim, groups * num_vars)
        self.codebook = nn.Parameter(torch.randn(1, groups * num_vars, out_dim // groups) * 0.1)

    def forward(self, x: torch.Tensor, tau: float):
        B, T, _ = x.shape
        logits = self.proj(x).view(B * T * self.groups, self.num_vars)
        gumbels = -torch.empty_like(logits).exponential_().log()
        soft = torch.softmax((logits + gumbels) / tau, dim=-1)  # expect: GS301
        index = soft.argmax(-1, keepdim=True)
        hard = torch.zeros_like(soft).scatter_(-1, index, 1.0)
        onehot = (hard - soft).detach() + soft
        avg_probs = torch.softmax(logits, -1).view(B * T, self.groups, -1).mean(0)
        vars_ = onehot.view(B * T, -1, 1) * self.codebook
        q = vars_.view(B * T, self.groups, self.num_vars, -1).sum(-2).view(B, T, -1)
        return q, avg_probs


class Wav2Vec(nn.Module):
    def __init__(self, cfg: Wav2VecConfig):
        super().__init__()
        self.encoder = ConvFeatureEncoder(cfg.conv_channels)
        self.post_proj = nn.Linear(cfg.conv_channels, cfg.embed_dim)
        self.mask_emb = nn.Parameter(torch.zeros(cfg.embed_dim).uniform_())
        layer = nn.TransformerEncoderLayer(cfg.embed_dim, 4, cfg.embed_dim * 2, dropout=0.0, batch_first=True)
        self.context = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.quantizer = GumbelQuantizer(cfg.conv_channels, cfg.num_groups, cfg.num_vars, cfg.final_dim)
        self.final_proj = nn.Linear(cfg.embed_dim, cfg.final_dim)

    def extract(self, wav: torch.Tensor):
        feats = self.encoder(wav)
        penalty = feats.float().pow(2).mean()
        return feats, penalty

    def contextualize(self, feats: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.post_proj(feats)
        x = torch.where(mask.unsqueeze(-1), self.mask_emb.to(x.dtype), x)
        return self.final_proj(self.context(x))
