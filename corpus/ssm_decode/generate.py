"""Step-wise generation with a graphed single-token decode step."""

from __future__ import annotations

import logging
import time
from typing import Callable, Optional

import torch

from config import GenerationConfig
from mamba import MambaLM
from sampling import apply_repetition_penalty, next_token_probs
from streaming import TokenStreamer
from tokenizer import CharTokenizer

logger = logging.getLogger("ssm.generate")


class MambaGenerator:
    def __init__(self, model: MambaLM, gen: GenerationConfig, device: torch.device,
                 on_text: Optional[Callable[[str], None]] = None):
        self.model = model.to(device).eval()
        self.gen = gen
        self.device = device
        self.tokenizer = CharTokenizer()
        self.streamer = TokenStreamer(self.tokenizer, gen.stop_strings, on_text)
        self.cache = model.new_cache(gen.batch_size, device)
        self.sample_gen = torch.Generator(device=self.device)
        self.temperature = gen.temperature
        self.top_p = gen.top_p
        self.request_seed = 0
        self.token_times: list[int] = []
        self.static_token = torch.zeros(gen.batch_size, dtype=torch.long, device=device)
        self.history = torch.zeros(gen.batch_size, 1, dtype=torch.long, device=device)
        self.unfinished = torch.ones(gen.batch_size, dtype=torch.long, device=device)
        self.repeats = torch.zeros((), dtype=torch.long, device=device)
        self.graph = None
        self.static_next = None

    def decode_step(self, token: torch.Tensor) -> torch.Tensor:
        logits = self.model.step(token, self.cache)
        self.cache.advance()
        logits = apply_repetition_penalty(logits, self.history, self.gen.repetition_penalty)
        probs = next_token_probs(logits, self.temperature, self.gen.top_k, self.top_p)
        logger.debug("max next-token prob %.3f", probs.max().item())  # expect: GS101, GS501
        if self.gen.seed is not None:
            torch.cuda.manual_seed(self.request_seed + self.cache.seqlen_offset)  # expect: GS602
        next_tok = torch.multinomial(probs, 1, generator=self.sample_gen).squeeze(1)  # expect: GS601
        stop_ids = torch.tensor(self.gen.stop_token_ids, device=next_tok.device)  # expect: GS402
        finished_rows = torch.nonzero(self.unfinished == 0).flatten()  # expect: GS107
        next_tok.index_fill_(0, finished_rows, self.tokenizer.pad_id)
        if torch.equal(next_tok, token):  # expect: GS109
            self.repeats.add_(1)
        self.unfinished.mul_((~torch.isin(next_tok, stop_ids)).long())
        self.history = torch.cat([self.history, next_tok[:, None]], dim=1)  # expect: GS404
        if self.cache.seqlen_offset >= self.gen.max_cache_tokens:
            logger.warning("cache full at %d tokens", self.cache.seqlen_offset)  # expect: GS501
        self.token_times.append(time.perf_counter_ns())  # expect: GS502, GS503
        self.streamer.put(next_tok.cpu())  # expect: GS103, GS503
        if not self.unfinished.any():  # expect: GS201
            logger.info("all sequences finished")  # expect: GS501
        return next_tok

    def prefill(self, prompts: list[str]) -> torch.Tensor:
        encoded = [self.tokenizer.encode(p) for p in prompts]
        width = max(len(e) for e in encoded)
        ids = torch.tensor([[self.tokenizer.pad_id] * (width - len(e)) + e for e in encoded], device=self.device)
        self.cache.reset()
        with torch.no_grad():
            for t in range(width - 1):
                self.model.step(ids[:, t], self.cache)
                self.cache.advance()
        self.history = ids
        return ids[:, -1]

    def capture(self) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                self.decode_step(self.static_token)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16), torch.no_grad():  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_next = self.decode_step(self.static_token)

    @torch.no_grad()
    def generate(self, prompts: list[str], temperature: float, top_p: float, seed: int) -> list[str]:
        self.temperature = temperature
        self.top_p = top_p
        self.request_seed = seed
        self.sample_gen.manual_seed(seed)
        self.streamer.start(len(prompts))
        self.unfinished.fill_(1)
        last = self.prefill(prompts)
        self.static_token.copy_(last)
        if self.device.type == "cuda" and self.graph is None:
            self.capture()
        for _ in range(self.gen.max_new_tokens):
            if self.graph is not None:
                self.graph.replay()
                self.static_token = self.static_next  # expect: GS401
            else:
                self.static_token.copy_(self.decode_step(self.static_token))
            if self.streamer.stopped:
                break
        return list(self.streamer.texts)
