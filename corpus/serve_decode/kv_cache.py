from __future__ import annotations

import torch

from config import EngineConfig


class PagedKVCache:
    """Fixed pool of KV pages; each sequence owns a list of page ids (its block table)."""

    def __init__(self, cfg: EngineConfig, device: torch.device):
        self.cfg = cfg
        self.block_size = cfg.block_size
        head_dim = cfg.d_model // cfg.n_heads
        self.kv_pages = torch.zeros(2, cfg.n_layers, cfg.num_blocks, cfg.block_size, cfg.n_heads, head_dim, device=device)
        self.free_blocks = list(range(cfg.num_blocks - 1, 0, -1))
        self.seq_lens: list[int] = [0] * cfg.max_batch
        self.write_offset = 0
        self.num_tokens = 0

    def allocate(self, n_blocks: int) -> list[int]:
        return [self.free_blocks.pop() for _ in range(n_blocks)]

    def release(self, blocks: list[int]) -> None:
        self.free_blocks.extend(blocks)

    def advance(self) -> None:
        self.write_offset += 1

    @property
    def slot(self) -> int:
        return self.write_offset % self.block_size

    def write(self, layer: int, page_ids: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        self.kv_pages[:, layer, page_ids, self.slot] = torch.stack([k, v])  # expect: GS301

    def gather(self, layer: int, block_table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pages = self.kv_pages[:, layer, block_table]
        b, n, s, h, d = pages.shape[1:]
        kv = pages.reshape(2, b, n * s, h, d)
        return kv[0], kv[1]

    def commit(self, batch: int) -> None:
        for i in range(batch):
            self.seq_lens[i] += 1  # expect: GS503
        self.num_tokens += batch  # expect: GS302
