from __future__ import annotations

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import MoCoConfig


class Encoder(nn.Module):
    def __init__(self, cfg: MoCoConfig):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(cfg.channels, cfg.width, 3, padding=1), nn.BatchNorm2d(cfg.width), nn.ReLU(),
            nn.Conv2d(cfg.width, cfg.width, 3, padding=1), nn.BatchNorm2d(cfg.width), nn.ReLU(),
        )
        self.proj = nn.Sequential(nn.Linear(cfg.width, cfg.width), nn.ReLU(), nn.Linear(cfg.width, cfg.dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            x = x.unsqueeze(0)
        return self.proj(self.conv(x).mean(dim=(2, 3)))


class NegativeQueue(nn.Module):
    def __init__(self, dim: int, size: int):
        super().__init__()
        self.size = size
        self.register_buffer("keys", F.normalize(torch.randn(dim, size), dim=0))
        self.ptr = 0

    @torch.no_grad()
    def enqueue(self, k: torch.Tensor) -> None:
        bs = k.shape[0]
        assert self.size % bs == 0, "queue size must be a multiple of the batch size"
        self.keys[:, self.ptr:self.ptr + bs] = k.T  # expect: GS301
        self.ptr = (self.ptr + bs) % self.size  # expect: GS302


class MoCo(nn.Module):
    def __init__(self, cfg: MoCoConfig):
        super().__init__()
        self.encoder_q = Encoder(cfg)
        self.encoder_k = copy.deepcopy(self.encoder_q).requires_grad_(False)
        self.queue = NegativeQueue(cfg.dim, cfg.queue_size)
        self.T = cfg.temperature

    @torch.no_grad()
    def momentum_update(self, m: float) -> None:
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.copy_(pk * m + pq.detach() * (1.0 - m))  # expect: GS301

    @torch.no_grad()
    def shuffled_keys(self, im_k: torch.Tensor) -> torch.Tensor:
        idx_shuffle = torch.randperm(im_k.shape[0], device=im_k.device)
        idx_unshuffle = torch.argsort(idx_shuffle)
        k = self.encoder_k(im_k[idx_shuffle])
        return F.normalize(k, dim=1)[idx_unshuffle]

    def forward(self, im_q: torch.Tensor, im_k: torch.Tensor, m: float) -> tuple[torch.Tensor, torch.Tensor]:
        q = F.normalize(self.encoder_q(im_q), dim=1)
        assert torch.isfinite(q).all(), "non-finite query embedding"  # expect: GS201
        self.momentum_update(m)
        k = self.shuffled_keys(im_k)
        l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.keys.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long).to(logits.device)  # expect: GS402
        self.queue.enqueue(k)
        return logits, labels
