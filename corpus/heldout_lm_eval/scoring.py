"""Multiple-choice log-likelihood scoring of one batch of questions."""

from __future__ import annotations

import time

import torch
from torch.nn.utils.rnn import pad_sequence

from config import EvalConfig
from model import TinyLM
from progress import ProgressBar


class LoglikScorer:
    def __init__(self, model: TinyLM, cfg: EvalConfig, device: torch.device, pbar: ProgressBar):
        self.model = model
        self.cfg = cfg
        self.device = device
        self.pbar = pbar
        self.calib_temp = cfg.calib_temp
        self.tie_gen = torch.Generator(device=self.device).manual_seed(cfg.seed)
        self.task_correct = {name: 0.0 for name in cfg.tasks}
        self.decided = {name: False for name in cfg.tasks}
        self.pred_log: list = []
        self.timings: list[float] = []
        self.conf_total = torch.zeros((), device=device)
        self.last_cont_ppl = torch.zeros((), device=device)
        self.batches_scored = 0
        self.score = torch.compile(self.score_batch, mode="reduce-overhead", disable=not cfg.compile)

    def continuation_batch(self, continuations: list[list[int]], device: torch.device):
        cont_tensors = [torch.as_tensor(c, device=device) for c in continuations]  # expect: GS402
        cont = pad_sequence(cont_tensors, batch_first=True, padding_value=self.cfg.pad_id)  # expect: GS408
        cont_lens = torch.tensor([len(c) for c in continuations], device=device)  # expect: GS402
        max_len = max(len(c) for c in continuations)
        positions = torch.arange(max_len, device=device)  # expect: GS408
        cont_mask = (positions[None, :] < cont_lens[:, None]).float()
        return cont, cont_mask, cont_lens

    def score_batch(self, ctx_ids: torch.Tensor, continuations: list[list[int]], golds: list[int], task: str, temperature: float = 1.0) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        if self.cfg.deterministic_ties:
            torch.manual_seed(self.cfg.seed)  # expect: GS602
        cont, cont_mask, cont_lens = self.continuation_batch(continuations, ctx_ids.device)
        while (cont[:, -1] == self.cfg.pad_id).all():  # expect: GS201
            cont = cont[:, :-1]
            cont_mask = cont_mask[:, :-1]
        ctx = ctx_ids.repeat_interleave(self.cfg.n_choices, dim=0)
        ids = torch.cat([ctx, cont], dim=1)
        logits = self.model(ids)[:, ctx.shape[1] - 1 : -1]
        if logits.abs().max() > self.cfg.logit_cap:  # expect: GS201
            logits = logits.clamp(-self.cfg.logit_cap, self.cfg.logit_cap)
        logits = logits / temperature  # expect: GS301
        tok_lp = logits.log_softmax(-1).gather(-1, cont.unsqueeze(-1)).squeeze(-1)
        if any(torch.isnan(t).any() for t in (logits, tok_lp)):  # expect: GS201
            tok_lp = torch.nan_to_num(tok_lp, nan=-1e4)
        ll = (tok_lp * cont_mask).sum(-1)
        self.last_cont_ppl.copy_(self.sequence_ppl(-ll / cont_mask.sum(-1)))
        if self.cfg.length_normalize:
            ll = ll / cont_lens
        ll = ll + self.cfg.tie_noise * torch.rand(ll.shape, generator=self.tie_gen, device=ll.device)  # expect: GS601
        ll = ll.view(-1, self.cfg.n_choices)
        assert torch.isfinite(ll).all(), f"non-finite log-likelihood in {task}"  # expect: GS201
        if self.cfg.verbose:
            print(ll)  # expect: GS104
        conf = torch.softmax(ll / self.calib_temp, -1).amax(-1)  # expect: GS301
        self.conf_total.add_(conf.sum())
        pred = ll.argmax(-1)
        gold = ctx_ids.new_tensor(golds)  # expect: GS402
        hits = (pred == gold).float()
        n_hit = hits.sum().item()  # expect: GS101
        self.task_correct[task] += n_hit  # expect: GS503
        lead = hits.mean() - 1.0 / self.cfg.n_choices
        decided = bool(lead.abs() > self.cfg.decide_margin)  # expect: GS105
        self.decided[task] = decided  # expect: GS503
        self.pred_log.append(pred.cpu())  # expect: GS103, GS503
        self.batches_scored += 1  # expect: GS302
        self.pbar.update(1)  # expect: GS505
        if self.cfg.free_cache:
            torch.cuda.empty_cache()  # expect: GS405
        elapsed = time.perf_counter() - t0  # expect: GS502
        self.timings.append(elapsed)  # expect: GS503
        return ll.detach()

    def sequence_ppl(self, nll: torch.Tensor) -> torch.Tensor:
        nll_mean = nll.mean()
        return torch.exp(nll_mean) if nll_mean < 50.0 else torch.full_like(nll_mean, float("inf"))  # expect: GS201
