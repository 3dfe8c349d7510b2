"""Medusa speculative decoding: one step proposes a tree of continuations with the extra heads,
verifies them with the base model in one pass and keeps the longest typical prefix."""

from __future__ import annotations

import json
import logging
import time

import torch
from torch.utils.data import DataLoader

from acceptance import typical_acceptance
from config import MedusaConfig
from heads import MedusaHeads
from kv_cache import KVCache
from model import TinyLM
from streaming import TokenStreamer, append_tokens
from tree import build_paths, generate_candidates, truncate_at_stop

logger = logging.getLogger(__name__)


def prompt_loader(prompts: list[torch.Tensor]) -> DataLoader:
    return DataLoader(prompts, batch_size=1, shuffle=False, pin_memory=True)


class MedusaDecoder:
    def __init__(self, cfg: MedusaConfig, device: torch.device):
        self.model = TinyLM(cfg).to(device).eval()
        self.heads = MedusaHeads(cfg.d_model, cfg.vocab_size, cfg.medusa_heads).to(device).eval()
        self.cfg = cfg
        self.device = device
        self.cache = KVCache(cfg.n_layers, cfg.n_heads, cfg.d_model // cfg.n_heads, cfg.max_len, device)
        self.tree_paths = build_paths(cfg.tree_choices, device)
        self.depth = self.tree_paths.shape[1] + 1
        self.one_mask = torch.ones(1, 1, dtype=torch.bool, device=device)
        self.streamer = TokenStreamer(cfg.stream)
        self._mask_cache: dict[int, torch.Tensor] = {}
        self.accept_history: list[int] = []
        self.steps = 0
        self.temperature = cfg.temperature
        self.t_start = time.monotonic()
        self.output_ids = torch.zeros(1, 0, dtype=torch.long, device=device)
        self.static_ids = torch.zeros(1, 1, dtype=torch.long, device=device)
        self.static_next = None
        self.graph = None

    def _tree_mask(self, paths: torch.Tensor, length: int) -> torch.Tensor:
        key = id(paths)  # expect: GS506
        mask = self._mask_cache.get(key)
        if mask is None:
            mask = torch.ones(length, length, dtype=torch.bool, device=paths.device).tril()
            self._mask_cache[key] = mask  # expect: GS503
        return mask

    def reset(self, prompt: torch.Tensor) -> None:
        self.cache.reset()
        self.output_ids = prompt.clone()
        self.steps = 0
        self.t_start = time.monotonic()

    @torch.no_grad()
    def prefill(self, prompt: torch.Tensor) -> None:
        length = prompt.shape[1] - 1
        positions = torch.arange(length, device=prompt.device)[None]
        mask = torch.ones(length, length, dtype=torch.bool, device=prompt.device).tril()
        _, kvs = self.model.forward_tokens(prompt[:, :-1], positions, self.cache, mask)
        for layer, (k, v) in enumerate(kvs):
            self.cache.store(layer, k[0], v[0])
        self.cache.advance(length)

    @torch.no_grad()
    def decode_step(self, last_token: torch.Tensor, temperature: float) -> torch.Tensor:
        cfg = self.cfg
        dev = last_token.device
        if cfg.deterministic:
            torch.manual_seed(cfg.sample_seed)  # expect: GS602

        positions = self.cache.positions(1, dev)
        hidden, kvs = self.model.forward_tokens(last_token.view(1, 1), positions[None], self.cache, self.one_mask)
        for layer, (k, v) in enumerate(kvs):
            self.cache.store(layer, k[0], v[0])
        self.cache.advance(1)
        h_last = hidden[:, -1]
        base_logits = self.model.lm_head(h_last)
        if base_logits.isnan().any():  # expect: GS201
            raise FloatingPointError("NaN logits from the base model")

        medusa_logits = self.heads(h_last)
        candidates = generate_candidates(base_logits, medusa_logits, self.tree_paths, cfg.topk)
        n_cand, depth = candidates.shape
        cand_pos = (positions + 1 + torch.arange(depth, device=dev)).expand(n_cand, -1)
        mask = self._tree_mask(self.tree_paths, depth)
        cand_hidden, cand_kvs = self.model.forward_tokens(candidates, cand_pos, self.cache, mask)
        cand_logits = self.model.lm_head(cand_hidden)

        accept_lengths = typical_acceptance(
            cand_logits, candidates, temperature, cfg.posterior_threshold, cfg.posterior_alpha
        )
        assert (accept_lengths < depth).all(), "accepted more tokens than proposed"  # expect: GS201
        best = accept_lengths.argmax()
        accept_len = int(accept_lengths[best])  # expect: GS105
        new_tokens = candidates[best, : accept_len + 1]  # expect: GS301
        consistent = torch.equal(new_tokens[:1], base_logits.argmax(-1))  # expect: GS109
        if not consistent:
            logger.warning("candidate tree lost the greedy base token")  # expect: GS501

        for layer, (k, v) in enumerate(cand_kvs):
            self.cache.store(layer, k[best, :, :accept_len], v[best, :, :accept_len])  # expect: GS301
        self.cache.advance(accept_len)

        self.accept_history.append(accept_len + 1)  # expect: GS503
        self.steps += 1  # expect: GS302
        mean_acc = accept_lengths.float().mean().item()  # expect: GS101
        now = time.monotonic()  # expect: GS502
        elapsed_ms = (now - self.t_start) * 1e3
        logger.debug("step %d: accepted %d (mean %.2f), %.1f ms", self.steps, accept_len + 1, mean_acc, elapsed_ms)  # expect: GS501
        if cfg.trace_path is not None:
            with open(cfg.trace_path, "a") as fh:  # expect: GS504
                fh.write(json.dumps({"step": self.steps, "accepted": accept_len + 1}) + "\n")
        self.streamer.put(new_tokens.tolist())  # expect: GS102, GS503

        stops = torch.tensor(cfg.stop_ids, device=dev)  # expect: GS402
        if torch.isin(new_tokens, stops).any():  # expect: GS201
            new_tokens = truncate_at_stop(new_tokens, stops)
        self.output_ids = append_tokens(self.output_ids, new_tokens)  # expect: GS401
        return self.output_ids[:, [-1]]  # expect: GS402

    def capture(self) -> None:
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_next = self.decode_step(self.static_ids, self.temperature)

    def finished(self, prompt_len: int) -> bool:
        if self.output_ids.shape[1] - prompt_len >= self.cfg.max_new_tokens:
            return True
        if self.cache.pos + self.depth + 1 >= self.cfg.max_len:
            return True
        last = self.output_ids[0, -1].item()
        return last in self.cfg.stop_ids

    def generate(self, prompt: torch.Tensor, temperature: float, replays: list) -> list[int]:
        self.temperature = temperature
        self.reset(prompt)
        self.prefill(prompt)
        last = prompt[:, -1:]
        while not self.finished(prompt.shape[1]):
            if self.graph is not None:
                self.static_ids = last  # expect: GS401
                self.graph.replay()
                replays.append(self.static_next)  # expect: GS407
                last = self.static_next
            else:
                last = self.decode_step(last, self.temperature)
        return self.output_ids[0, prompt.shape[1] :].tolist()
