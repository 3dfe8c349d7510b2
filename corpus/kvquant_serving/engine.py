"""Continuous-batching LLM engine; the decode step is graphed on a GPU."""

from __future__ import annotations

import logging
import time

import torch

from config import ServingConfig
from detok import StreamDetokenizer
from kv_cache import QuantizedPagedKVCache
from model import TinyLM, log_softmax_gather
from sampler import Sampler
from scheduler import Request, Scheduler

logger = logging.getLogger("serve.engine")


class LLMEngine:
    def __init__(self, cfg: ServingConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        torch.manual_seed(cfg.seed)
        self.model = TinyLM(cfg).to(device).eval()
        self.cache = QuantizedPagedKVCache(cfg, device)
        self.scheduler = Scheduler(cfg, cache=self.cache)
        self.sampler = Sampler(device, cfg.seed)
        self.detok = StreamDetokenizer(cfg.vocab_size)
        self.logit_bias = [0.0] * cfg.vocab_size
        self.token_history = torch.zeros(cfg.max_batch, 1, dtype=torch.long, device=device)
        self.presence_penalty = 0.2
        self.request_seed: int | None = None
        self.decode_steps = 0
        self.slot_rids = [-1] * cfg.max_batch
        self.first_token_times: dict[int, float] = {}
        self.logprob_history: list[torch.Tensor] = []
        self._seen_tables: set[int] = set()
        self.graph = None
        self.static: dict[str, torch.Tensor] = {}
        self.stop_lists: list[list[int]] = [[cfg.eos_id]]

    def build_batch(self) -> dict[str, torch.Tensor]:
        cfg = self.cfg
        tokens, positions, slots, lens, temps, top_ps = [], [], [], [], [], []
        tables = torch.zeros(cfg.max_batch, cfg.max_blocks_per_seq, dtype=torch.long)
        for i, req in enumerate(self.scheduler.running):
            if req is None:
                tokens.append(0); positions.append(0); slots.append(0); lens.append(0)
                temps.append(1.0); top_ps.append(1.0)
                continue
            pos = req.context_len - 1
            last = req.output[-1] if req.output else req.prompt[-1]
            tokens.append(last); positions.append(pos); lens.append(req.context_len)
            slots.append(req.blocks[pos // cfg.block_size] * cfg.block_size + pos % cfg.block_size)
            temps.append(req.params.temperature); top_ps.append(req.params.top_p)
            tables[i, : len(req.blocks)] = torch.tensor(req.blocks)
        return {
            "tokens": torch.tensor(tokens, device=self.device),
            "positions": torch.tensor(positions, device=self.device),
            "slot_mapping": torch.tensor(slots, device=self.device),
            "block_tables": tables.to(self.device),
            "context_lens": torch.tensor(lens, device=self.device),
            "temperatures": torch.tensor(temps, device=self.device),
            "top_ps": torch.tensor(top_ps, device=self.device),
        }

    def decode_step(self, tokens, positions, slot_mapping, block_tables, context_lens, temperatures, top_ps,
                    presence_penalty: float, stop_lists: list[list[int]]):
        if block_tables.data_ptr() in self._seen_tables:  # expect: GS506
            logger.info("reusing block table buffer")  # expect: GS501
        logits = self.model(tokens, positions, slot_mapping, block_tables, context_lens, self.cache)
        logits = logits + torch.tensor(self.logit_bias, device=logits.device)  # expect: GS402
        seen = torch.zeros_like(logits).scatter_(-1, self.token_history, 1.0)
        logits = logits - presence_penalty * seen  # expect: GS301
        full = context_lens >= self.cfg.max_context
        if full.any() and self.cfg.eos_id >= 0:  # expect: GS201
            logits[full] = torch.finfo(logits.dtype).min  # expect: GS108
        temperatures = temperatures if temperatures.min() > 0 else temperatures.clamp(min=1e-3)  # expect: GS201
        next_tokens = self.sampler.sample(logits, temperatures, top_ps, self.request_seed)
        stop_table = torch.full((len(stop_lists), max(len(s) for s in stop_lists)), -1, device=logits.device)  # expect: GS408
        hit_stop = (next_tokens[:, None, None] == stop_table[None]).any(-1).any(-1)
        finished_rows = torch.where(hit_stop)[0]  # expect: GS107
        n_live = int((context_lens > 0).sum())  # expect: GS105
        self.token_history = torch.cat([self.token_history, next_tokens[:, None]], dim=1)  # expect: GS404
        for rid, tok in zip(self.slot_rids, next_tokens.tolist()):  # expect: GS102
            if rid >= 0:
                self.detok.push(rid, tok)  # expect: GS503
                self.first_token_times.setdefault(rid, time.monotonic())  # expect: GS502, GS503
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106
            free_bytes, _ = torch.cuda.mem_get_info()  # expect: GS405
            logger.info("live=%d finished=%s free=%d", n_live, finished_rows.cpu(), free_bytes)  # expect: GS103, GS501
        self.decode_steps += 1  # expect: GS302
        return logits, next_tokens

    def graph_lm_head(self, sample: torch.Tensor) -> None:
        head = self.model.lm_head
        head.register_forward_hook(self._trace_head)  # expect: GS706
        self.model.lm_head = torch.cuda.make_graphed_callables(head, (sample,))

    def _trace_head(self, module, inputs, output) -> None:
        self.last_head_norm = output.detach().norm()

    def capture(self) -> None:
        self.static = self.build_batch()
        self.static_temps = self.static.pop("temperatures")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.decode_step(**self.static, temperatures=self.static_temps, presence_penalty=self.presence_penalty, stop_lists=self.stop_lists)
        torch.cuda.current_stream().wait_stream(side)
        finalize = torch.compile(log_softmax_gather, dynamic=False)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.cfg.use_fp16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_logits, self.static_next = self.decode_step(
                    **self.static, temperatures=self.static_temps, presence_penalty=self.presence_penalty,
                    stop_lists=self.stop_lists,
                )
                self.static_logprobs = finalize(self.static_logits, self.static_next)  # expect: GS709

    def step(self) -> list[int]:
        self.scheduler.admit()
        self.slot_rids = [r.rid if r is not None else -1 for r in self.scheduler.running]
        batch = self.build_batch()
        if self.graph is not None:
            self.static_temps = batch.pop("temperatures")  # expect: GS401
            for name, value in batch.items():
                self.static[name].copy_(value)
            self.graph.replay()
            self.logprob_history.append(self.static_logprobs)  # expect: GS407
            next_tokens = self.static_next.clone()
        else:
            logits, next_tokens = self.decode_step(**batch, presence_penalty=self.presence_penalty, stop_lists=self.stop_lists)
            self.logprob_history.append(log_softmax_gather(logits, next_tokens))
        now = time.perf_counter()
        host_tokens = next_tokens.cpu().tolist()
        for slot, req in enumerate(self.scheduler.running):
            if req is None:
                continue
            tok = host_tokens[slot]
            req.output.append(tok)
            if req.first_token_at is None:
                req.first_token_at = now
            if tok == self.cfg.eos_id or len(req.output) >= req.params.max_tokens:
                req.finished_at = now
                self.scheduler.evict(slot)
        self.sampler.temperature_floor = max(0.01, self.sampler.temperature_floor * 0.9)
        return host_tokens

    def submit(self, rid: int, prompt: list[int], params) -> bool:
        return self.scheduler.submit(Request(rid, prompt, params, arrival=time.perf_counter()))
