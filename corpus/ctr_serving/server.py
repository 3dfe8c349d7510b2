"""Batched CTR scoring: one CUDA graph per padded batch-size bucket on a GPU."""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from dataclasses import dataclass

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from config import ServingConfig
from features import hash_ids, trim_bags
from model import CTRModel


@dataclass
class Request:
    request_id: int
    user_key: int
    dense: torch.Tensor
    raw_ids: torch.Tensor
    received_at: float = 0.0
    latency_ms: float = 0.0
    score: float = 0.0


@dataclass
class StaticBatch:
    dense: torch.Tensor
    raw_ids: torch.Tensor
    user_key: torch.Tensor
    out: torch.Tensor | None = None


class ScoringServer:
    def __init__(self, cfg: ServingConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model_a = CTRModel(cfg).to(device).eval()
        self.model_b = CTRModel(cfg).to(device).eval()
        self.feature_mean = torch.zeros(cfg.num_dense, device=device)
        self.b_traffic_pct = cfg.b_traffic_pct
        self.threshold = cfg.threshold
        self.buckets = sorted(cfg.batch_buckets)
        self.static: dict[int, StaticBatch] = {
            bs: StaticBatch(
                torch.zeros(bs, cfg.num_dense, device=device),
                torch.full((bs, cfg.num_sparse, cfg.bag_len), -1, dtype=torch.long, device=device),
                torch.zeros(bs, dtype=torch.long, device=device),
            )
            for bs in self.buckets
        }
        self.graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self.pool = None
        self.hot_graph = None
        self.static_scores = None
        self._score_cache: dict[int, torch.Tensor] = {}
        self.stats: dict[str, int] = defaultdict(int)
        self.trace: list[str] = []
        self.latencies_ms: list[float] = []
        self.requests_served = 0
        self.arm_counts = [0, 0]
        self.start_evt = torch.cuda.Event(enable_timing=True) if device.type == "cuda" else None
        self.end_evt = torch.cuda.Event(enable_timing=True) if device.type == "cuda" else None
        self.last_gpu_ms = 0.0
        if device.type == "cuda":
            self.ragged_fn = torch.compile(self.score_ragged, mode="reduce-overhead")
        else:
            self.ragged_fn = self.score_ragged

    @torch.no_grad()
    def score_batch(self, dense: torch.Tensor, raw_ids: torch.Tensor, user_key: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        start = time.perf_counter()  # expect: GS502
        if self.start_evt is not None:
            self.start_evt.record()
        if cfg.memoize:
            hit = self._score_cache.get(dense.data_ptr())  # expect: GS506
            if hit is not None:
                return hit
        if cfg.deterministic_jitter:
            torch.manual_seed(cfg.jitter_seed)  # expect: GS602
        ids = trim_bags(hash_ids(raw_ids, cfg.num_buckets, cfg.hash_mult, cfg.hash_add))
        x = (torch.log1p(dense.clamp(min=0)) - self.feature_mean) * torch.tensor(cfg.dense_scale, device=dense.device)  # expect: GS402
        x = x + cfg.jitter * torch.randn_like(x)
        score_a = self.model_a(x, ids)
        if torch.equal(self.model_a.head.weight, self.model_b.head.weight):  # expect: GS109
            probs = score_a.sigmoid()
            route_b = torch.zeros_like(user_key, dtype=torch.bool)
        else:
            score_b = self.model_b(x, ids)
            route_b = (user_key % 100).float() < self.b_traffic_pct  # expect: GS301
            probs = torch.where(route_b, score_b, score_a).sigmoid()
        arm_hist = torch.bincount(route_b.long(), minlength=2)  # expect: GS107
        self.arm_counts = arm_hist.tolist()  # expect: GS102
        clicks = (probs > self.threshold).float()  # expect: GS301
        self.stats["positives"] += int((probs > 0.5).sum())  # expect: GS105, GS503
        if (probs > 0.99).any():  # expect: GS201
            self.trace.append(f"saturated batch of {dense.shape[0]}: max {probs.max()}")  # expect: GS104, GS503
        self.requests_served += dense.shape[0]  # expect: GS302
        if self.start_evt is not None:
            self.end_evt.record()
            self.last_gpu_ms = self.start_evt.elapsed_time(self.end_evt)  # expect: GS106
        self.latencies_ms.append((time.perf_counter() - start) * 1e3)  # expect: GS502, GS503
        if cfg.debug:
            print("scored batch of", dense.shape[0])  # expect: GS501
        if cfg.release_cache:
            torch.cuda.empty_cache()  # expect: GS405
        out = torch.stack([probs, clicks], dim=-1)
        if cfg.memoize:
            self._score_cache[dense.data_ptr()] = out  # expect: GS503, GS506
        return out

    @torch.no_grad()
    def score_ragged(self, dense: torch.Tensor, id_lists: list[torch.Tensor], user_key: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        flat = pad_sequence(id_lists, batch_first=True, padding_value=-1)  # expect: GS408
        raw_ids = flat.view(len(id_lists), cfg.num_sparse, -1)  # expect: GS408
        ids = hash_ids(raw_ids, cfg.num_buckets, cfg.hash_mult, cfg.hash_add)
        return self.model_a(dense, ids).sigmoid()

    def calibrate(self, calib_dense: torch.Tensor) -> None:
        loader = DataLoader(calib_dense, batch_size=8, pin_memory=True)
        total = torch.zeros(self.cfg.num_dense)
        n = 0
        for chunk in loader:
            total += torch.log1p(chunk.clamp(min=0)).sum(0)
            n += chunk.shape[0]
        self.feature_mean.copy_(total / max(n, 1))

    def capture_buckets(self) -> None:
        for bs in reversed(self.buckets):
            st = self.static[bs]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(self.cfg.warmup_iters):
                    self.score_batch(st.dense, st.raw_ids, st.user_key)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self.pool):  # expect: GS708
                st.out = self.score_batch(st.dense, st.raw_ids, st.user_key)
            self.pool = g.pool()
            self.graphs[bs] = g
        st = self.static[self.buckets[0]]
        self.hot_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.hot_graph, pool=self.pool):  # expect: GS708
            self.static_scores = self.score_batch(st.dense, st.raw_ids, st.user_key)

    def recalibrate(self, recent_dense: torch.Tensor) -> None:
        self.feature_mean = torch.log1p(recent_dense.clamp(min=0)).mean(0).to(self.device)  # expect: GS401

    def ramp_traffic(self, pct: float) -> None:
        self.b_traffic_pct = pct

    def score(self, requests: list[Request]) -> torch.Tensor:
        n = len(requests)
        bs = self.buckets[min(bisect.bisect_left(self.buckets, n), len(self.buckets) - 1)]
        st = self.static[bs]
        st.dense.zero_()
        st.raw_ids.fill_(-1)
        st.dense[:n].copy_(torch.stack([r.dense for r in requests]))
        st.raw_ids[:n].copy_(torch.stack([r.raw_ids for r in requests]))
        st.user_key[:n].copy_(torch.tensor([r.user_key for r in requests]))
        if bs in self.graphs:
            self.graphs[bs].replay()
            out = st.out
        else:
            out = self.score_batch(st.dense, st.raw_ids, st.user_key)
        probs = out[:n, 0].cpu()
        self.threshold = 0.9 * self.threshold + 0.1 * float(probs.mean())
        done = time.perf_counter()
        for r, p in zip(requests, probs.tolist()):
            r.score = p
            r.latency_ms = (done - r.received_at) * 1e3
        return probs

    def score_stream(self, batches: list[list[Request]]):
        st = self.static[self.buckets[0]]
        for reqs in batches:
            n = len(reqs)
            st.dense[:n].copy_(torch.stack([r.dense for r in reqs]))
            st.raw_ids[:n].copy_(torch.stack([r.raw_ids for r in reqs]))
            st.user_key[:n].copy_(torch.tensor([r.user_key for r in reqs]))
            if self.hot_graph is not None:
                self.hot_graph.replay()
            else:
                self.static_scores = self.score_batch(st.dense, st.raw_ids, st.user_key)
            yield self.static_scores  # expect: GS407


def serve_forever(server: ScoringServer, traffic: list[list[Request]], ramp: list[float]) -> list[torch.Tensor]:
    results = []
    for step, (reqs, pct) in enumerate(zip(traffic, ramp)):
        if step % 2 == 1:
            server.recalibrate(torch.stack([r.dense for r in reqs]))
        server.ramp_traffic(pct)
        results.append(server.score(reqs))
    return results
