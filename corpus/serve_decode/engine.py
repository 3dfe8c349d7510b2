from __future__ import annotations

import logging
import time

import torch

from config import EngineConfig, Request
from kv_cache import PagedKVCache
from model import TinyDecoder
from sampler import BatchSampler

logger = logging.getLogger("serve.engine")


class LLMEngine:
    def __init__(self, cfg: EngineConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TinyDecoder(cfg).to(device).eval()
        self.cache = PagedKVCache(cfg, device)
        self.sampler = BatchSampler(device)
        self.active: list[Request] = []
        self.block_tables: list[list[int]] = []
        self.generated: dict[str, list[int]] = {}
        self.results: dict[str, torch.Tensor] = {}
        self.step_count = 0
        self.repeats = 0
        self.t_start = time.monotonic()
        self.graph: torch.cuda.CUDAGraph | None = None
        b = cfg.max_batch
        self.static_ids = torch.zeros(b, dtype=torch.long, device=device)
        self.static_positions = torch.zeros(b, dtype=torch.long, device=device)
        self.static_page_ids = torch.zeros(b, dtype=torch.long, device=device)
        self.last_tokens = torch.full((b,), -1, dtype=torch.long, device=device)

    def add_request(self, req: Request) -> None:
        if len(self.active) >= self.cfg.max_batch:
            raise RuntimeError("batch is full")
        n_blocks = (len(req.prompt) + req.params.max_new_tokens) // self.cfg.block_size + 1
        self.active.append(req)
        self.block_tables.append(self.cache.allocate(n_blocks))
        self.generated[req.request_id] = []

    @torch.inference_mode()
    def decode_step(self, ids: torch.Tensor, positions: torch.Tensor, page_ids: torch.Tensor,
                    block_tables: list[list[int]]) -> torch.Tensor:
        max_blocks = max(len(b) for b in block_tables)
        padded = [b + [0] * (max_blocks - len(b)) for b in block_tables]
        table = torch.tensor(padded, dtype=torch.long, device=ids.device)  # expect: GS402
        slot_mask = torch.ones(len(block_tables), max_blocks, dtype=torch.bool, device=ids.device)  # expect: GS408
        logits = self.model(ids, positions, self.cache, page_ids, table, slot_mask)
        next_tokens = self.sampler(logits, self.active)
        finished = next_tokens == self.cfg.eos_id
        if finished.any():  # expect: GS201
            logger.debug("eos reached in batch")  # expect: GS501
        for i, req in enumerate(self.active):
            if next_tokens[i] == req.params.stop_token:  # expect: GS201
                req.finished = True
        new_ids = next_tokens.tolist()  # expect: GS102
        for req, tok in zip(self.active, new_ids):
            self.generated[req.request_id].append(tok)  # expect: GS503
        prev = self.last_tokens[: next_tokens.shape[0]]
        if torch.equal(next_tokens, prev):  # expect: GS109
            self.repeats += 1  # expect: GS302
        prev.copy_(next_tokens)
        self.cache.commit(len(self.active))
        self.step_count += 1  # expect: GS302
        elapsed = time.monotonic() - self.t_start  # expect: GS502
        logger.debug("decode step %d at %.3fs", self.step_count, elapsed)  # expect: GS501
        return next_tokens

    def _capture(self) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(11):
                self.decode_step(self.static_ids, self.static_positions, self.static_page_ids, self.block_tables)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_next = self.decode_step(self.static_ids, self.static_positions, self.static_page_ids,
                                                self.block_tables)

    def _inputs(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ids, positions, pages = [], [], []
        for i, req in enumerate(self.active):
            out = self.generated[req.request_id]
            seq = req.prompt + out
            pos = len(seq) - 1
            ids.append(seq[-1])
            positions.append(pos)
            pages.append(self.block_tables[i][pos // self.cfg.block_size])
        return (torch.tensor(ids, dtype=torch.long), torch.tensor(positions, dtype=torch.long),
                torch.tensor(pages, dtype=torch.long))

    def step(self) -> torch.Tensor:
        ids, positions, pages = self._inputs()
        n = len(self.active)
        if self.device.type == "cuda":
            if self.graph is None:
                self._capture()
            self.static_ids[:n].copy_(ids, non_blocking=True)
            self.static_page_ids[:n].copy_(pages, non_blocking=True)
            self.static_positions = positions.to(self.device)  # expect: GS401
            self.graph.replay()
            for req in self.active:
                self.results[req.request_id] = self.static_next  # expect: GS407
            next_tokens = self.static_next
        else:
            self.static_ids[:n].copy_(ids)
            self.static_positions[:n].copy_(positions)
            self.static_page_ids[:n].copy_(pages)
            next_tokens = self.decode_step(self.static_ids[:n], self.static_positions[:n],
                                           self.static_page_ids[:n], self.block_tables)
        self.cache.advance()
        return next_tokens

    def retire_finished(self) -> list[Request]:
        done = [r for r in self.active if r.finished or len(self.generated[r.request_id]) >= r.params.max_new_tokens]
        for r in done:
            idx = self.active.index(r)
            self.cache.release(self.block_tables.pop(idx))
            self.active.pop(idx)
            r.output_ids = list(self.generated[r.request_id])
        return done
