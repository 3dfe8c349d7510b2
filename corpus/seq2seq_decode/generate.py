"""Batched translation with a CUDA-graph-captured single-token decode step."""

from __future__ import annotations

import logging

import torch
from torch.utils.data import DataLoader, TensorDataset

from cache import StaticKVCache
from config import GenerationConfig
from model import Translator
from sampling import banned_token_mask, finished_rows, sample_next, top_k_filter

log = logging.getLogger(__name__)


def make_loader(src: torch.Tensor, batch_size: int) -> DataLoader:
    return DataLoader(TensorDataset(src), batch_size=batch_size, shuffle=False, pin_memory=True)


class TranslationSession:
    """Holds the static buffers a captured decode step reads and writes."""

    def __init__(self, model: Translator, gen_cfg: GenerationConfig, batch: int, device: torch.device):
        cfg = model.cfg
        self.model, self.cfg, self.gen_cfg, self.device = model, cfg, gen_cfg, device
        self.cache = StaticKVCache(batch, cfg.n_heads, cfg.max_tgt_len, cfg.d_model // cfg.n_heads, device)
        self.tokens = torch.full((batch, cfg.max_tgt_len + 1), cfg.pad_id, dtype=torch.long, device=device)
        self.finished = torch.zeros(batch, dtype=torch.bool, device=device)
        self.lengths = torch.zeros(batch, dtype=torch.long, device=device)
        self.scores = torch.zeros(batch, device=device)
        self.position = torch.zeros(1, 1, dtype=torch.long, device=device)
        self.memory = torch.zeros(batch, cfg.max_src_len, cfg.d_model, device=device)
        self.memory_mask = torch.zeros(batch, cfg.max_src_len, dtype=torch.bool, device=device)
        self.alignments = torch.zeros(batch, 0, cfg.max_src_len, device=device)
        self.cur_len = 1
        self.temperature = 1.0
        self.sample_gen = torch.Generator(device=device)
        self.streamed: list[list[int]] = []
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_logp: torch.Tensor | None = None

    def reset(self, memory: torch.Tensor, memory_mask: torch.Tensor) -> None:
        self.cache.reset()
        self.tokens.fill_(self.cfg.pad_id)
        self.tokens[:, 0] = self.cfg.bos_id
        self.finished.zero_()
        self.lengths.zero_()
        self.scores.zero_()
        self.position.fill_(0)
        self.memory.copy_(memory)
        self.memory_mask = memory_mask  # expect: GS401
        self.cur_len = 1

    def decode_step(self) -> torch.Tensor:
        token = self.tokens[:, self.cur_len - 1].unsqueeze(1)  # expect: GS301
        logp, cross = self.model.decode_one(token, self.position, self.memory, self.memory_mask, self.cache)
        logp = logp[:, [-1], :].squeeze(1)  # expect: GS402
        self.alignments = torch.cat([self.alignments, cross], dim=1)  # expect: GS404
        if self.gen_cfg.bad_words_ids is not None:
            logp = logp.masked_fill(banned_token_mask(self.gen_cfg.bad_words_ids, logp.shape[-1], logp.device), float("-inf"))
        if not self.gen_cfg.do_sample:
            next_tok = logp.argmax(-1, keepdim=True)
        elif self.gen_cfg.seed is None:
            next_tok = sample_next(logp, self.temperature, self.gen_cfg.top_k)
        else:
            self.sample_gen.manual_seed(self.gen_cfg.seed + self.cur_len)  # expect: GS602
            probs = top_k_filter(logp / self.temperature, self.gen_cfg.top_k).softmax(-1)  # expect: GS301
            next_tok = torch.multinomial(probs, 1, generator=self.sample_gen)  # expect: GS601
        assert (next_tok < self.cfg.tgt_vocab).all(), "sampled id outside the target vocabulary"  # expect: GS201
        pad = torch.tensor(self.cfg.pad_id, device=next_tok.device)  # expect: GS402
        next_tok = torch.where(self.finished.unsqueeze(1), pad, next_tok)
        lp = ((5.0 + self.cur_len) / 6.0) ** self.gen_cfg.length_penalty
        self.scores.add_(logp.gather(1, next_tok).squeeze(1) * (~self.finished) / lp)  # expect: GS301
        self.tokens[:, self.cur_len] = next_tok.squeeze(1)  # expect: GS301
        newly_done = (next_tok.squeeze(1) == self.cfg.eos_id) & ~self.finished
        self.lengths[newly_done] = self.cur_len  # expect: GS301
        self.finished |= newly_done
        self.position.add_(1)
        self.cur_len += 1  # expect: GS302
        if self.finished.any():  # expect: GS201
            log.debug("rows finished: %s", finished_rows(self.finished).tolist())  # expect: GS102, GS501
        self.streamed.append(next_tok.squeeze(1).cpu().tolist())  # expect: GS102, GS103, GS503
        return logp

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.decode_step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_logp = self.decode_step()

    def run(self, max_steps: int, keep_logits: bool) -> list[torch.Tensor]:
        step_logits = []
        for _ in range(max_steps):
            if self.graph is not None:
                self.graph.replay()
                if keep_logits:
                    step_logits.append(self.static_logp)  # expect: GS407
            else:
                logp = self.decode_step()
                if keep_logits:
                    step_logits.append(logp)
            if bool(self.finished.all()):
                break
        return step_logits

    def hypotheses(self) -> torch.Tensor:
        max_len = self.cfg.max_tgt_len
        lengths = torch.where(self.lengths > 0, self.lengths, torch.full_like(self.lengths, max_len))
        keep = torch.arange(max_len, device=self.device) < lengths[:, None]
        return self.tokens[:, 1:].masked_fill(~keep, self.cfg.pad_id).cpu()


def translate(model: Translator, src: torch.Tensor, gen_cfg: GenerationConfig, batch_size: int, device: torch.device) -> dict[str, torch.Tensor]:
    model.eval()
    session = TranslationSession(model, gen_cfg, batch_size, device)
    hyps, scores, n_logits = [], [], 0
    with torch.no_grad():
        for (src_batch,) in make_loader(src, batch_size):
            memory, memory_mask = model.encode(src_batch.to(device, non_blocking=True))
            best_tokens, best_score = None, None
            for temperature in gen_cfg.temperatures:
                session.temperature = temperature
                session.reset(memory, memory_mask)
                if gen_cfg.use_graph and device.type == "cuda" and session.graph is None:
                    session.capture()
                    session.reset(memory, memory_mask)
                n_logits += len(session.run(model.cfg.max_tgt_len, gen_cfg.return_step_logits))
                mean_score = session.scores.mean().item()
                if best_score is None or mean_score > best_score:
                    best_tokens, best_score = session.hypotheses(), mean_score
                if not gen_cfg.do_sample:
                    break
            hyps.append(best_tokens)
            scores.append(best_score)
    return {"tokens": torch.cat(hyps), "scores": torch.tensor(scores), "n_logits": torch.tensor(n_logits), "alignment_steps": torch.tensor(session.alignments.shape[1])}
