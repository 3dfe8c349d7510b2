"""Paged KV cache with int8 pages and one scale per block."""

from __future__ import annotations

import torch

from config import ServingConfig
from quant import absmax_scale, dequantize, quantize


class QuantizedPagedKVCache:
    def __init__(self, cfg: ServingConfig, device: torch.device):
        shape = (cfg.num_blocks, cfg.block_size, cfg.n_heads, cfg.head_dim)
        self.cfg = cfg
        self.k_pages = torch.zeros(shape, dtype=torch.int8, device=device)
        self.v_pages = torch.zeros(shape, dtype=torch.int8, device=device)
        self.k_scale = torch.full((cfg.num_blocks,), 1e-6, device=device)
        self.v_scale = torch.full((cfg.num_blocks,), 1e-6, device=device)
        self.free_blocks = list(range(cfg.num_blocks - 1, 0, -1))
        self.writes = 0

    def allocate(self) -> int:
        if not self.free_blocks:
            raise RuntimeError("KV cache exhausted")
        return self.free_blocks.pop()

    def release(self, blocks: list[int]) -> None:
        self.free_blocks.extend(b for b in blocks if b != 0)

    def write(self, k: torch.Tensor, v: torch.Tensor, slot_mapping: torch.Tensor) -> None:
        block_ids = slot_mapping // self.cfg.block_size
        offsets = slot_mapping % self.cfg.block_size
        if (offsets == 0).any():  # expect: GS201
            self.k_scale.index_fill_(0, block_ids[offsets == 0], 1e-6)  # expect: GS108
        self.k_scale = torch.maximum(self.k_scale.index_put((block_ids,), absmax_scale(k, (1, 2)), accumulate=False), self.k_scale)  # expect: GS401
        self.v_scale.index_put_((block_ids,), absmax_scale(v, (1, 2)))
        ks = self.k_scale[block_ids].view(-1, 1, 1)
        vs = self.v_scale[block_ids].view(-1, 1, 1)
        self.k_pages[block_ids, offsets] = quantize(k, ks)
        self.v_pages[block_ids, offsets] = quantize(v, vs)
        self.writes += 1  # expect: GS302

    def gather(self, block_tables: torch.Tensor, max_ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
        b = block_tables.shape[0]
        k = dequantize(self.k_pages[block_tables], self.k_scale[block_tables].view(b, -1, 1, 1, 1))
        v = dequantize(self.v_pages[block_tables], self.v_scale[block_tables].view(b, -1, 1, 1, 1))
        k = k.reshape(b, -1, self.cfg.n_heads, self.cfg.head_dim)[:, :max_ctx]
        v = v.reshape(b, -1, self.cfg.n_heads, self.cfg.head_dim)[:, :max_ctx]
        return k, v
