"""Evaluation harness: per-task multiple-choice accuracy with early stopping, and perplexity.

The scoring step is compiled with mode="reduce-overhead" (CUDA graphs); the perplexity step is
captured with torch.cuda.graph when a GPU is present.
"""

from __future__ import annotations

import torch

from config import EvalConfig
from model import TinyLM, token_nll
from progress import ProgressBar
from report import format_table
from scoring import LoglikScorer
from tasks import Task


class Evaluator:
    def __init__(self, model: TinyLM, cfg: EvalConfig, device: torch.device, total_batches: int):
        self.model = model.eval()
        self.cfg = cfg
        self.device = device
        self.pbar = ProgressBar(total_batches, desc="eval")
        self.scorer = LoglikScorer(model, cfg, device, self.pbar)
        self.ppl_graph = None
        self.static_ids = torch.zeros(2, cfg.lm.max_len, dtype=torch.long, device=device)
        self.nll_batches: list = []

    @torch.no_grad()
    def evaluate_task(self, task: Task) -> dict:
        n_seen = 0
        bq = self.cfg.batch_questions
        for start in range(0, len(task.examples), bq):
            chunk = task.examples[start : start + bq]
            ctx = torch.tensor([ex.context for ex in chunk], device=self.device)
            conts = [c for ex in chunk for c in ex.choices]
            golds = [ex.gold for ex in chunk]
            self.scorer.score(ctx, conts, golds, task.name, 1.0)
            n_seen += len(chunk)
            self.scorer.calib_temp = max(self.cfg.min_temp, self.scorer.calib_temp * self.cfg.temp_decay)
            if self.scorer.decided[task.name]:
                break
        acc = self.scorer.task_correct[task.name] / max(1, n_seen)
        return {"task": task.name, "acc": acc, "n": n_seen, "early": n_seen < len(task.examples)}

    def capture_perplexity(self) -> None:
        nll_fn = torch.compile(token_nll, dynamic=False)
        self.ppl_graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.ppl_graph):
                self.static_nll = nll_fn(self.model, self.static_ids)  # expect: GS709

    @torch.no_grad()
    def perplexity(self, docs: list[torch.Tensor]) -> float:
        for doc in docs:
            if self.ppl_graph is None:
                self.nll_batches.append(token_nll(self.model, doc.to(self.device)))
            else:
                self.static_ids = doc.to(self.device)  # expect: GS401
                self.ppl_graph.replay()
                self.nll_batches.append(self.static_nll)  # expect: GS407
        nll = torch.cat([n.flatten() for n in self.nll_batches])
        return float(self.scorer.sequence_ppl(nll))

    def run(self, tasks: list[Task], docs: list[torch.Tensor]) -> tuple[list[dict], float, str]:
        rows = [self.evaluate_task(t) for t in tasks]
        ppl = self.perplexity(docs)
        self.pbar.close(stream=None)
        return rows, ppl, format_table(rows)
