"""Continuous-batching scheduler: admission, block tables, eviction."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from config import SamplingParams, ServingConfig
from kv_cache import QuantizedPagedKVCache


@dataclass
class Request:
    rid: int
    prompt: list[int]
    params: SamplingParams
    output: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    arrival: float = 0.0
    first_token_at: float | None = None
    finished_at: float | None = None

    @property
    def context_len(self) -> int:
        return len(self.prompt) + len(self.output)


class Scheduler:
    def __init__(self, cfg: ServingConfig, cache: QuantizedPagedKVCache):
        self.cfg = cfg
        self.cache = cache
        self.waiting: deque[Request] = deque()
        self.running: list[Request | None] = [None] * cfg.max_batch
        self.finished: list[Request] = []

    def submit(self, req: Request) -> bool:
        if len(self.waiting) >= self.cfg.max_queue:
            return False
        self.waiting.append(req)
        return True

    def admit(self) -> None:
        for slot, cur in enumerate(self.running):
            if cur is None and self.waiting:
                req = self.waiting[0]
                need = -(-(req.context_len + req.params.max_tokens) // self.cfg.block_size)
                if need > min(self.cfg.max_blocks_per_seq, len(self.cache.free_blocks)):
                    break
                self.waiting.popleft()
                req.blocks = [self.cache.allocate() for _ in range(need)]
                self.running[slot] = req

    def evict(self, slot: int) -> None:
        req = self.running[slot]
        if req is not None:
            self.cache.release(req.blocks)
            self.finished.append(req)
            self.running[slot] = None

    @property
    def num_running(self) -> int:
        return sum(r is not None for r in self.running)
