"""Vector quantiser with a straight-through estimator and dead-code restarts."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes: int, dim: int, beta: float, usage_decay: float, dead_threshold: float,
                 device: torch.device):
        super().__init__()
        self.num_codes = num_codes
        self.dim = dim
        self.beta = beta
        self.usage_decay = usage_decay
        self.dead_threshold = dead_threshold
        self.device = device
        self.embedding = nn.Embedding(num_codes, dim)
        self.embedding.weight.data.uniform_(-1.0 / num_codes, 1.0 / num_codes)
        self.register_buffer("usage", torch.ones(num_codes))
        self.restart_gen = torch.Generator(device=self.device)
        self.restart_gen.manual_seed(1234)
        self.restarts = 0

    def forward(self, z: torch.Tensor):
        assert torch.isfinite(z).all(), "encoder produced non-finite latents"  # expect: GS201
        z = z.permute(0, 2, 3, 1).contiguous()
        z_flat = z.view(-1, self.dim)
        codebook = self.embedding.weight
        d = z_flat.pow(2).sum(1, keepdim=True) - 2 * z_flat @ codebook.t() + codebook.pow(2).sum(1)[None]
        indices = d.argmin(dim=1)
        z_q = self.embedding(indices).view(z.shape)
        loss = F.mse_loss(z_q, z.detach()) + self.beta * F.mse_loss(z, z_q.detach())
        z_q = z + (z_q - z).detach()
        perplexity = self.track_usage(indices, z_flat.detach())
        return z_q.permute(0, 3, 1, 2).contiguous(), loss, perplexity, indices

    @torch.no_grad()
    def track_usage(self, indices: torch.Tensor, z_flat: torch.Tensor) -> torch.Tensor:
        onehot = F.one_hot(indices, num_classes=self.num_codes).float()
        self.usage.mul_(self.usage_decay).add_(onehot.mean(0), alpha=1.0 - self.usage_decay)
        counts = torch.bincount(indices, minlength=self.num_codes)  # expect: GS107
        probs = counts.float() / counts.sum()
        perplexity = torch.exp(-(probs * torch.log(probs + 1e-10)).sum())
        self.restart_dead_codes(z_flat)
        return perplexity

    @torch.no_grad()
    def restart_dead_codes(self, z_flat: torch.Tensor) -> None:
        dead = self.usage < self.dead_threshold
        if dead.any():  # expect: GS201
            n_dead = int(dead.sum())  # expect: GS105
            rand_idx = torch.randint(0, z_flat.shape[0], (n_dead,), generator=self.restart_gen, device=z_flat.device)  # expect: GS601
            self.embedding.weight.data[dead] = z_flat[rand_idx]  # expect: GS108
            self.usage[dead] = 1.0
            self.restarts += 1  # expect: GS302
