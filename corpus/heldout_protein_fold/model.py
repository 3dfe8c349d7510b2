"""Evoformer-lite trunk: MSA row attention with pair bias, triangle updates, recycling."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from config import ModelConfig


@dataclass
class FoldOutput:
    distogram: torch.Tensor
    coords: torch.Tensor
    plddt_logits: torch.Tensor


class MSARowAttention(nn.Module):
    def __init__(self, c_msa: int, c_pair: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.norm = nn.LayerNorm(c_msa)
        self.qkv = nn.Linear(c_msa, 3 * c_msa, bias=False)
        self.pair_bias = nn.Linear(c_pair, n_heads, bias=False)
        self.out = nn.Linear(c_msa, c_msa)

    def forward(self, msa: torch.Tensor, pair: torch.Tensor) -> torch.Tensor:
        b, s, r, c = msa.shape
        h = self.n_heads
        q, k, v = self.qkv(self.norm(msa)).chunk(3, dim=-1)
        q = q.view(b, s, r, h, c // h).transpose(2, 3)
        k = k.view(b, s, r, h, c // h).transpose(2, 3)
        v = v.view(b, s, r, h, c // h).transpose(2, 3)
        bias = self.pair_bias(pair).permute(0, 3, 1, 2).unsqueeze(1)
        att = (q @ k.transpose(-1, -2)) * (c // h) ** -0.5 + bias
        ctx = att.softmax(-1) @ v
        return msa + self.out(ctx.transpose(2, 3).reshape(b, s, r, c))


class OuterProductMean(nn.Module):
    def __init__(self, c_msa: int, c_pair: int, c_hidden: int = 4):
        super().__init__()
        self.norm = nn.LayerNorm(c_msa)
        self.a = nn.Linear(c_msa, c_hidden)
        self.b = nn.Linear(c_msa, c_hidden)
        self.out = nn.Linear(c_hidden * c_hidden, c_pair)

    def forward(self, msa: torch.Tensor) -> torch.Tensor:
        m = self.norm(msa)
        a, b = self.a(m), self.b(m)
        outer = torch.einsum("bsic,bsjd->bijcd", a, b) / msa.shape[1]
        return self.out(outer.flatten(-2))


class TriangleMultiplication(nn.Module):
    def __init__(self, c_pair: int, outgoing: bool = True):
        super().__init__()
        self.outgoing = outgoing
        self.norm = nn.LayerNorm(c_pair)
        self.proj_a = nn.Linear(c_pair, c_pair)
        self.proj_b = nn.Linear(c_pair, c_pair)
        self.gate_a = nn.Linear(c_pair, c_pair)
        self.gate_b = nn.Linear(c_pair, c_pair)
        self.norm_out = nn.LayerNorm(c_pair)
        self.out = nn.Linear(c_pair, c_pair)
        self.gate_o = nn.Linear(c_pair, c_pair)

    def forward(self, pair: torch.Tensor, pair_mask: torch.Tensor) -> torch.Tensor:
        assert torch.isfinite(pair).all(), "non-finite pair activations"  # expect: GS201
        z = self.norm(pair)
        m = pair_mask.unsqueeze(-1)
        a = torch.sigmoid(self.gate_a(z)) * self.proj_a(z) * m
        b = torch.sigmoid(self.gate_b(z)) * self.proj_b(z) * m
        if self.outgoing:
            upd = torch.einsum("bikc,bjkc->bijc", a, b)
        else:
            upd = torch.einsum("bkic,bkjc->bijc", a, b)
        return pair + torch.sigmoid(self.gate_o(z)) * self.out(self.norm_out(upd))


class EvoformerBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.row_attn = MSARowAttention(cfg.c_msa, cfg.c_pair, cfg.n_heads)
        self.transition = nn.Sequential(nn.LayerNorm(cfg.c_msa), nn.Linear(cfg.c_msa, 2 * cfg.c_msa), nn.ReLU(), nn.Linear(2 * cfg.c_msa, cfg.c_msa))
        self.opm = OuterProductMean(cfg.c_msa, cfg.c_pair)
        self.tri_out = TriangleMultiplication(cfg.c_pair, outgoing=True)
        self.tri_in = TriangleMultiplication(cfg.c_pair, outgoing=False)

    def forward(self, msa: torch.Tensor, pair: torch.Tensor, pair_mask: torch.Tensor):
        msa = self.row_attn(msa, pair)
        msa = msa + self.transition(msa)
        pair = pair + self.opm(msa)
        pair = self.tri_out(pair, pair_mask)
        pair = self.tri_in(pair, pair_mask)
        return msa, pair


class StructureHead(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.single = nn.Linear(cfg.c_msa, cfg.c_msa)
        self.coords = nn.Linear(cfg.c_msa + cfg.c_pair, 3)
        self.dist = nn.Linear(cfg.c_pair, cfg.n_dist_bins)
        self.plddt = nn.Sequential(nn.LayerNorm(cfg.c_msa), nn.Linear(cfg.c_msa, cfg.n_plddt_bins))

    def forward(self, first_row: torch.Tensor, pair: torch.Tensor):
        s = torch.relu(self.single(first_row))
        pooled = pair.mean(2)
        coords = torch.cumsum(torch.tanh(self.coords(torch.cat([s, pooled], dim=-1))) * 3.8, dim=1)
        dist_logits = self.dist(0.5 * (pair + pair.transpose(1, 2)))
        return coords, dist_logits, self.plddt(s)


class FoldModel(nn.Module):
    def __init__(self, cfg: ModelConfig, device: torch.device):
        super().__init__()
        self.cfg = cfg
        self.device = device
        self.msa_embed = nn.Embedding(cfg.n_tokens, cfg.c_msa)
        self.target_embed = nn.Embedding(cfg.n_tokens, cfg.c_pair)
        self.rel_pos = nn.Embedding(2 * cfg.n_res - 1, cfg.c_pair)
        self.recycle_norm = nn.LayerNorm(cfg.c_pair)
        self.blocks = nn.ModuleList(EvoformerBlock(cfg) for _ in range(cfg.n_blocks))
        self.head = StructureHead(cfg)
        self.dropout_gen = torch.Generator(device=self.device)
        self.dropout_gen.manual_seed(1234)
        self.register_buffer("prev_pair", torch.zeros(cfg.batch_size, cfg.n_res, cfg.n_res, cfg.c_pair))
        idx = torch.arange(cfg.n_res)
        self.register_buffer("rel_idx", (idx[None, :] - idx[:, None]) + cfg.n_res - 1, persistent=False)
        self.recycle_count = 0

    def embed(self, msa_tokens: torch.Tensor, aatype: torch.Tensor):
        msa = self.msa_embed(msa_tokens)
        t = self.target_embed(aatype)
        pair = t[:, :, None] + t[:, None, :] + self.rel_pos(self.rel_idx)
        return msa, pair

    def trunk(self, msa: torch.Tensor, pair: torch.Tensor, pair_mask: torch.Tensor):
        for blk in self.blocks:
            if self.cfg.use_checkpoint and self.training:
                msa, pair = checkpoint(blk, msa, pair, pair_mask, use_reentrant=False)  # expect: GS603
            else:
                msa, pair = blk(msa, pair, pair_mask)
        return msa, pair

    def forward(self, msa_tokens: torch.Tensor, aatype: torch.Tensor, mask: torch.Tensor) -> FoldOutput:
        if msa_tokens.dim() == 2:
            msa_tokens = msa_tokens.unsqueeze(0)
        msa0, pair0 = self.embed(msa_tokens, aatype)
        pair_mask = mask[:, :, None] * mask[:, None, :]
        if self.training:
            keep = torch.rand(msa0.shape[:-1], generator=self.dropout_gen, device=msa0.device) > self.cfg.msa_dropout  # expect: GS601
            msa0 = msa0 * keep.unsqueeze(-1) / (1.0 - self.cfg.msa_dropout)
        n_cycles = random.randint(1, self.cfg.max_recycle)  # expect: GS502
        self.recycle_count += n_cycles  # expect: GS302
        msa, pair = msa0, pair0
        for _ in range(n_cycles):
            pair = pair0 + self.recycle_norm(self.prev_pair)
            msa, pair = self.trunk(msa0, pair, pair_mask)
            delta = (pair.detach() - self.prev_pair).abs().mean()
            self.prev_pair = 0.5 * self.prev_pair + 0.5 * pair.detach()  # expect: GS401
            if delta < self.cfg.recycle_tol:  # expect: GS201
                break
        coords, dist_logits, plddt_logits = checkpoint(self.head, msa[:, 0], pair, use_reentrant=False, preserve_rng_state=False)
        return FoldOutput(distogram=dist_logits, coords=coords, plddt_logits=plddt_logits)
