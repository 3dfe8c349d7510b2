"""Dense passage retriever training with a momentum key encoder and a queue."""

from __future__ import annotations

import copy
import math
import time

import torch
import torch.nn.functional as F

from config import RetrieverConfig
from encoder import TextEncoder
from losses import contrastive_logits, margin_penalty, recall_at_k
from monitor import MetricLogger, StepBar, elapsed_since
from memory_bank import EmbeddingQueue


class RetrieverTrainer:
    def __init__(self, cfg: RetrieverConfig, device: torch.device, total_steps: int):
        self.cfg = cfg
        self.device = device
        self.query_encoder = TextEncoder(cfg).to(device)
        self.passage_encoder = TextEncoder(cfg).to(device)
        self.key_encoder = copy.deepcopy(self.passage_encoder).requires_grad_(False)
        self.tokens_seen = 0
        self.passage_encoder.register_forward_hook(self._count_tokens)  # expect: GS706
        self.log_temp = torch.nn.Parameter(torch.tensor(math.log(1.0 / cfg.init_temperature), device=device))
        params = list(self.query_encoder.parameters()) + list(self.passage_encoder.parameters())
        self.opt = torch.optim.SGD(params, lr=cfg.lr, momentum=0.9)
        self.temp_opt = torch.optim.Adam([self.log_temp], lr=cfg.temp_lr)
        self.scaler = torch.amp.GradScaler(device.type, enabled=device.type == "cuda")
        self.queue = EmbeddingQueue(cfg.queue_size, cfg.dim, cfg.recent_size, device)
        self.metrics = MetricLogger()
        self.pbar = StepBar(total_steps)
        self.hard_pool: set = set()
        self.step_seconds: list = []
        self.t0 = 0.0
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")
        else:
            self.step_fn = self.train_step

    def _count_tokens(self, module, inputs, output) -> None:
        self.tokens_seen += 1

    def graph_passage_encoder(self, sample: torch.Tensor) -> None:
        self.passage_encoder = torch.cuda.make_graphed_callables(self.passage_encoder, (sample,))

    @torch.no_grad()
    def _momentum_update(self) -> None:
        for pk, pq in zip(self.key_encoder.parameters(), self.passage_encoder.parameters()):
            pk.lerp_(pq, 1.0 - self.cfg.momentum)

    def train_step(self, q_tok: torch.Tensor, p_tok: torch.Tensor, hard_tok: torch.Tensor,
                   passage_ids: torch.Tensor, hard_weight: float) -> torch.Tensor:
        q = self.query_encoder(q_tok)
        p = self.passage_encoder(p_tok)
        hard = self.passage_encoder(hard_tok)
        if not torch.isfinite(hard).all():  # expect: GS201
            hard = torch.nan_to_num(hard)
        with torch.no_grad():
            self._momentum_update()
            p_key = self.key_encoder(p_tok)
        if self.log_temp > math.log(self.cfg.max_logit_scale):  # expect: GS201
            self.log_temp.data.clamp_(max=math.log(self.cfg.max_logit_scale))
        logits = contrastive_logits(q, p, hard, self.queue.bank(), self.log_temp.exp())
        assert not torch.isnan(logits).any(), "nan logits"  # expect: GS201
        labels = torch.arange(q.shape[0], device=q.device)
        same = passage_ids[None, :] == passage_ids[:, None]
        in_batch = logits[:, : q.shape[0]]
        dup_scores = in_batch[same]  # expect: GS108
        n_unique = torch.unique(passage_ids).numel()  # expect: GS107
        dup_penalty = dup_scores.mean() * (q.shape[0] - n_unique)
        margins = torch.tensor(self.cfg.margins, device=q.device)  # expect: GS402
        pos = (q * p).sum(-1)
        neg = (q * hard).sum(-1)
        loss = F.cross_entropy(logits, labels) + 0.0 * dup_penalty
        loss = loss + hard_weight * margin_penalty(pos, neg, margins)  # expect: GS301
        acc = (logits.argmax(-1) == labels).float().mean()
        acc_val = acc.item()  # expect: GS101
        self.metrics.log("train/acc", acc_val)  # expect: GS501
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.temp_opt.step()  # expect: GS701
        self.opt.zero_grad(set_to_none=False)
        self.temp_opt.zero_grad(set_to_none=False)
        hard_k = min(self.cfg.hard_k, int(same.sum()))  # expect: GS105
        top_ids = logits.detach().topk(hard_k, dim=-1).indices.tolist()  # expect: GS102
        self.hard_pool.update(i for row in top_ids for i in row)  # expect: GS503
        self.queue.enqueue(p_key, passage_ids)
        self.queue.push_hard(hard)
        if self.cfg.snapshot_queue:
            torch.save(self.queue.keys, self.cfg.snapshot_path)  # expect: GS504
        self.step_seconds.append(elapsed_since(self.t0))  # expect: GS503
        self.pbar.update(1)  # expect: GS505
        return loss.detach()

    def fit(self, corpus, steps: int) -> list[float]:
        losses = []
        for it in range(steps):
            q, p, h, ids = (t.to(self.device) for t in corpus.batch())
            ramp = min(1.0, (it + 1) / 4)
            self.t0 = time.perf_counter()
            loss = self.step_fn(q, p, h, ids, self.cfg.hard_weight * ramp)
            losses.append(loss.item())
        return losses

    @torch.no_grad()
    def evaluate(self, corpus) -> dict[str, float]:
        self.query_encoder.eval()
        self.passage_encoder.eval()
        q = self.query_encoder(corpus.queries.to(self.device))
        p = self.passage_encoder(corpus.passages.to(self.device))
        scores = (q @ p.T).cpu()
        gold = torch.arange(scores.shape[0])
        out = {f"recall@{k}": recall_at_k(scores, gold, k) for k in self.cfg.recall_ks}
        self.query_encoder.train()
        self.passage_encoder.train()
        return out
