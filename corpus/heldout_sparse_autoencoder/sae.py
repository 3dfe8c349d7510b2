"""Top-k sparse autoencoder with a unit-norm decoder and an AuxK loss for dead latents."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class SAEOutput:
    recon: torch.Tensor
    latents: torch.Tensor
    pre_acts: torch.Tensor
    indices: torch.Tensor


class TopKSAE(nn.Module):
    def __init__(self, d_in: int, d_sae: int, k: int, k_aux: int):
        super().__init__()
        self.k = k
        self.k_aux = k_aux
        w = torch.randn(d_sae, d_in) / d_in**0.5
        self.W_dec = nn.Parameter(w / w.norm(dim=-1, keepdim=True))
        self.W_enc = nn.Parameter(self.W_dec.detach().t().clone())
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        pre = F.relu((x - self.b_dec) @ self.W_enc + self.b_enc)
        assert not torch.isnan(pre).any(), "NaN pre-activations"  # expect: GS201
        vals, idx = pre.topk(self.k, dim=-1)
        latents = torch.zeros_like(pre).scatter_(-1, idx, vals)
        return latents, pre, idx

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        return latents @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> SAEOutput:
        latents, pre, idx = self.encode(x)
        return SAEOutput(self.decode(latents), latents, pre, idx)

    def aux_loss(self, residual: torch.Tensor, pre: torch.Tensor, dead: torch.Tensor) -> torch.Tensor:
        dead_pre = pre.masked_fill(~dead, 0.0)
        vals, idx = dead_pre.topk(self.k_aux, dim=-1)
        aux_latents = torch.zeros_like(pre).scatter_(-1, idx, vals)
        return (aux_latents @ self.W_dec - residual).pow(2).sum(-1).mean()

    @torch.no_grad()
    def remove_parallel_grads(self) -> None:
        if self.W_dec.grad is None:
            return
        parallel = (self.W_dec.grad * self.W_dec).sum(-1, keepdim=True)
        self.W_dec.grad.sub_(parallel * self.W_dec)

    def decoder_is_unit_norm(self) -> bool:
        norms = self.W_dec.norm(dim=-1)
        return torch.allclose(norms, torch.ones_like(norms), atol=1e-5)  # expect: GS109

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        self.W_dec.div_(self.W_dec.norm(dim=-1, keepdim=True).clamp_min(1e-8))
