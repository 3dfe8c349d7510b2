"""Speculative sampling (Leviathan et al. / Chen et al.) with a small draft model and a larger
target model. `SpeculativeDecoder.speculate_step` drafts `num_draft` tokens, verifies them with one
target forward and emits the accepted prefix plus one corrected token. On a GPU it is captured once
with torch.cuda.graph on the first request and replayed; on CPU it runs eagerly."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from lm import TinyLM
from sampling import accepted_counts, residual_probs, top_p_probs

logger = logging.getLogger("specdec")


@dataclass
class SpecConfig:
    num_draft: int = 3
    top_p: float = 0.9
    eos_id: int = 0
    verbose: bool = False


class SpeculativeDecoder:
    def __init__(self, target: TinyLM, draft: TinyLM, cfg: SpecConfig, device: torch.device, seed: int = 0):
        self.target = target.eval()
        self.draft = draft.eval()
        self.cfg = cfg
        self.device = device
        self.target_caches = target.make_caches(1, device)
        self.draft_caches = draft.make_caches(1, device)
        # acceptance coin flips come from their own stream so that runs are reproducible
        self.gen = torch.Generator(device="cuda" if device.type == "cuda" else "cpu")
        self.gen.manual_seed(seed)
        self.timing = device.type == "cuda"
        if self.timing:
            self.start_evt = torch.cuda.Event(enable_timing=True)
            self.end_evt = torch.cuda.Event(enable_timing=True)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.reset(torch.zeros(1, 0, dtype=torch.long, device=device))

    def reset(self, prompt: torch.Tensor) -> None:
        for cache in (*self.target_caches, *self.draft_caches):
            cache.reset()
        self.output = prompt.clone()
        self.stats = {"drafted": 0, "accepted": 0}
        self.acceptance: list[float] = []
        self.latency_ms: list[float] = []
        self.done = False

    @torch.no_grad()
    def speculate_step(self, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
        k = self.cfg.num_draft
        if self.timing:
            self.start_evt.record()
        draft_probs, draft_tokens = [], []
        cur = tokens
        for _ in range(k):
            p = top_p_probs(self.draft(cur, self.draft_caches)[:, -1], temperature, self.cfg.top_p)
            cur = torch.multinomial(p, 1)
            draft_probs.append(p)
            draft_tokens.append(cur)
        self.draft(cur, self.draft_caches)  # keep the draft cache as long as the target's
        draft_probs = torch.stack(draft_probs, dim=1)
        draft_tokens = torch.cat(draft_tokens, dim=1)

        p_target = top_p_probs(self.target(torch.cat([tokens, draft_tokens], dim=1), self.target_caches), temperature, self.cfg.top_p)
        u = torch.rand(draft_tokens.shape, device=tokens.device, generator=self.gen)  # expect: GS601
        n_acc = accepted_counts(p_target, draft_probs, draft_tokens, u)
        n = int(n_acc.min())  # expect: GS105
        if n < k:  # expect: GS201
            p_next = residual_probs(p_target[:, n], draft_probs[:, n])  # expect: GS301
        else:
            p_next = p_target[:, k]
        next_token = torch.multinomial(p_next, 1)
        new_tokens = torch.cat([draft_tokens[:, :n], next_token], dim=1)  # expect: GS301
        for cache in (*self.target_caches, *self.draft_caches):
            cache.rollback(k - n)

        self.output = torch.cat([self.output, new_tokens], dim=1)  # expect: GS404
        self.stats["drafted"] += k  # expect: GS503
        self.stats["accepted"] += n  # expect: GS503
        self.acceptance.append(n_acc.float().mean().item())  # expect: GS101, GS503
        if (new_tokens == self.cfg.eos_id).any():  # expect: GS201
            self.done = True
        if self.cfg.verbose:
            logger.debug("accepted %d of %d draft tokens", n, k)  # expect: GS501
        if self.timing:
            self.end_evt.record()
            self.end_evt.synchronize()  # expect: GS106
            self.latency_ms.append(self.start_evt.elapsed_time(self.end_evt))  # expect: GS106, GS503
        return next_token

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, max_new_tokens: int, temperature: float = 1.0) -> list[int]:
        if prompt.dim() == 1:
            prompt = prompt[None]
        prompt = prompt.to(self.device)
        self.reset(prompt)
        self.target(prompt[:, :-1], self.target_caches)  # prefill, eager
        self.draft(prompt[:, :-1], self.draft_caches)
        tokens = prompt[:, -1:]
        if self.device.type == "cuda":
            static_tokens = tokens.clone()
            if self.graph is None:
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.static_next = self.speculate_step(static_tokens, temperature)
            while self.output.size(1) - prompt.size(1) < max_new_tokens and not self.done:
                self.graph.replay()
                static_tokens.copy_(self.static_next)
        else:
            while self.output.size(1) - prompt.size(1) < max_new_tokens and not self.done:
                tokens = self.speculate_step(tokens, temperature)
        return self.output[0, prompt.size(1):].tolist()


def build(seed: int, device: torch.device, cfg: SpecConfig | None = None) -> SpeculativeDecoder:
    torch.manual_seed(seed)
    target = TinyLM(width=32, layers=2).to(device)
    draft = TinyLM(width=16, layers=1).to(device)
    return SpeculativeDecoder(target, draft, cfg or SpecConfig(), device, seed)


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dec = build(0, dev)
    print(dec.generate(torch.tensor([5, 9, 13, 2]), max_new_tokens=12, temperature=0.8), dec.stats)
