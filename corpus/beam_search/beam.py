"""Beam search with finished-hypothesis bookkeeping in the classic Hugging Face style. `beam_step`
is the capture region (`@graphsafe.region`); on a GPU it is captured once with torch.cuda.graph."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

import graphsafe
from model import TinyLM

log = logging.getLogger("beam_search")


class BeamSearch:
    def __init__(self, model: TinyLM, batch: int, beams: int, max_len: int, eos_id: int = 1,
                 length_penalty: float = 1.0, device=None):
        self.model = model.eval()
        self.B, self.K, self.max_len, self.eos_id = batch, beams, max_len, eos_id
        self.length_penalty = length_penalty
        self.tokens = torch.zeros(batch, beams, max_len, dtype=torch.long, device=device)
        self.scores = torch.zeros(batch, beams, device=device)
        self.finished = torch.zeros(batch, beams, dtype=torch.bool, device=device)
        self.cur_len = 0
        self.hypotheses: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch)]
        self.done = False

    def start(self, prompt: torch.Tensor) -> None:
        P = prompt.size(1)
        self.tokens[:, :, :P] = prompt[:, None, :]
        self.scores.fill_(-1e9)
        self.scores[:, 0] = 0.0  # only the first beam is alive at the start
        self.finished.zero_()
        self.cur_len = P
        self.hypotheses = [[] for _ in range(self.B)]
        self.done = False

    @graphsafe.region
    @torch.no_grad()
    def beam_step(self) -> torch.Tensor:
        B, K, V = self.B, self.K, self.model.tok.num_embeddings
        logits = self.model(self.tokens.view(B * K, -1))[:, self.cur_len - 1]  # expect: GS301
        logp = F.log_softmax(logits.float(), dim=-1).view(B, K, V)
        # a finished beam keeps its score by emitting eos (= padding) at no cost
        eos_only = torch.full_like(logp, -1e9)
        eos_only[..., self.eos_id] = 0.0
        logp = torch.where(self.finished[..., None], eos_only, logp)
        cand = (self.scores[..., None] + logp).view(B, K * V)
        top_scores, top_idx = cand.topk(K, dim=-1)
        beam_idx, tok = top_idx // V, top_idx % V
        prev_finished = self.finished.gather(1, beam_idx)
        self.tokens.copy_(self.tokens.gather(1, beam_idx[..., None].expand(-1, -1, self.max_len)))
        self.tokens[:, :, self.cur_len] = tok  # expect: GS301
        self.scores.copy_(top_scores)
        self.finished.copy_(prev_finished | (tok == self.eos_id))
        log.info("len {} best {}".format(self.cur_len, top_scores[:, 0]))  # expect: GS104, GS501
        for b in range(B):
            for k in range(K):
                if tok[b, k].item() == self.eos_id and not prev_finished[b, k]:  # expect: GS101, GS201
                    score = top_scores[b, k] / (self.cur_len + 1) ** self.length_penalty  # expect: GS301
                    self.hypotheses[b].append((float(score), self.tokens[b, k].tolist()))  # expect: GS105, GS102, GS503
        self.cur_len += 1  # expect: GS302
        if torch.equal(self.finished, torch.ones_like(self.finished)):  # expect: GS109
            self.done = True
        return top_scores

    def search(self, prompt: torch.Tensor, max_new_tokens: int) -> list[tuple[float, list[int]]]:
        self.start(prompt)
        steps = min(max_new_tokens, self.max_len - prompt.size(1))
        if self.tokens.is_cuda:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.beam_step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.beam_step()
            for _ in range(steps - 2):
                graph.replay()
        else:
            for _ in range(steps):
                self.beam_step()
                if self.done:
                    break
        best = []
        for b in range(self.B):
            alive = [(float(self.scores[b, k]) / self.cur_len ** self.length_penalty, self.tokens[b, k].tolist())
                     for k in range(self.K) if not self.finished[b, k]]
            best.append(max(self.hypotheses[b] + alive, key=lambda h: h[0]))
        return best


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    search = BeamSearch(TinyLM().to(dev), batch=2, beams=3, max_len=16, device=dev)
    print(search.search(torch.randint(2, 40, (2, 4), device=dev), max_new_tokens=8))
