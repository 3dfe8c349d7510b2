import random

import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizer(nn.Module):
    def __init__(self, dim: int, size: int):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(size, dim) * 0.1)
        self.register_buffer("usage", torch.zeros(size))
        self.size = size

    def forward(self, z: torch.Tensor):
        if z.dim() != 3:
            raise ValueError("expected (B, T, D)")
        flat = z.reshape(-1, z.shape[-1])
        dist = torch.cdist(flat, self.codebook)
        codes = dist.argmin(-1)
        q = F.embedding(codes, self.codebook).view_as(z)
        self.usage = 0.99 * self.usage + 0.01 * F.one_hot(codes, num_classes=self.size).float().mean(0)  # expect: GS401
        if self.usage.min() < 1e-4:  # expect: GS201
            self.codebook.data.add_(0.01 * torch.randn_like(self.codebook))
        commit = F.mse_loss(z, q.detach())
        q = z + (q - z).detach()
        return q, codes.view(z.shape[0], -1), commit


class ResidualVQ(nn.Module):
    def __init__(self, dim: int, n_q: int, size: int, dropout: float):
        super().__init__()
        self.layers = nn.ModuleList(VectorQuantizer(dim, size) for _ in range(n_q))
        self.dropout = dropout

    def active_quantizers(self) -> int:
        if random.random() < self.dropout:  # expect: GS502
            return random.randint(1, len(self.layers))  # expect: GS502
        return len(self.layers)

    def forward(self, z: torch.Tensor):
        n_active = self.active_quantizers()
        residual = z
        out = torch.zeros_like(z)
        all_codes, commits = [], []
        for layer in self.layers[:n_active]:  # expect: GS301 (a host draw's number, frozen where it enters device work)
            q, codes, commit = layer(residual)
            out = out + q
            residual = residual - q.detach()
            all_codes.append(codes)
            commits.append(commit)
        return out, torch.stack(all_codes, 1), torch.stack(commits).sum(), n_active


def codebook_perplexity(codes: torch.Tensor, size: int) -> torch.Tensor:
    counts = torch.bincount(codes.flatten())  # expect: GS107
    probs = counts.float() / counts.sum()
    return torch.exp(-(probs * torch.log(probs + 1e-9)).sum())
