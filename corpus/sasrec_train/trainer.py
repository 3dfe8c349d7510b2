from __future__ import annotations

import logging
import random

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from config import SASRecConfig
from metrics import EarlyStopper, batch_hit_rate, ndcg_hr_at_k
from model import SASRec

logger = logging.getLogger("sasrec")


class SASRecTrainer:
    def __init__(self, cfg: SASRecConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = SASRec(cfg.n_items, cfg.hidden, cfg.heads, cfg.blocks).to(device)
        self.opt = torch.optim.Adagrad(self.model.parameters(), lr=cfg.lr)
        self.l2_weight = cfg.l2
        self.step_count = 0
        self.history: list = []
        self.stats: dict = {}
        self.recent_users = torch.zeros(0, cfg.hidden, device=device)
        self.stopper = EarlyStopper(cfg.patience)
        self.step_fn = self.train_step
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")

    @property
    def l2_scale(self) -> float:
        return self.l2_weight

    def end_epoch(self, epoch: int) -> None:
        self.l2_weight = self.cfg.l2 * self.cfg.l2_decay ** (epoch + 1)

    def train_step(self, histories: list[torch.Tensor], negatives: torch.Tensor, temperature: float) -> torch.Tensor:
        torch.manual_seed(self.cfg.seed)  # expect: GS602
        seqs = pad_sequence(histories, batch_first=True)  # expect: GS408
        inputs, targets = seqs[:, :-1], seqs[:, 1:]
        max_len = max(len(h) for h in histories)
        positions = torch.arange(max_len - 1, device=self.device)  # expect: GS408
        h = self.model.encode(inputs, positions)
        neg = negatives[:, 1:]
        if (neg == targets).any():  # expect: GS201
            neg = torch.where(neg == targets, (neg % (self.cfg.n_items - 1)) + 1, neg)
        pos_logits = self.model.score(h, targets) / temperature  # expect: GS301
        neg_logits = self.model.score(h, neg) / temperature  # expect: GS301
        mask = targets > 0
        n_valid = int(mask.sum())  # expect: GS105
        loss = (
            F.binary_cross_entropy_with_logits(pos_logits[mask], torch.ones_like(pos_logits[mask]), reduction="sum")  # expect: GS108
            + F.binary_cross_entropy_with_logits(neg_logits, torch.zeros_like(neg_logits), weight=mask.float(), reduction="sum")
        ) / max(n_valid, 1)
        reg = self.model.item_emb(targets).pow(2).mean()
        loss = loss + self.l2_scale * reg  # expect: GS301
        if random.random() < self.cfg.aux_prob:  # expect: GS502
            loss = loss + 0.1 * reg
        assert torch.isfinite(loss), "non-finite BCE"  # expect: GS201
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
        if not torch.isfinite(grad_norm):  # expect: GS201
            self.opt.zero_grad(set_to_none=False)
        self.opt.step()  # expect: GS701
        last = h[:, -1].detach()
        self.recent_users = torch.cat([self.recent_users, last])  # expect: GS404
        collapsed = torch.allclose(last[0], last[-1])  # expect: GS109
        if collapsed:
            logger.warning("user representations collapsed at step %d", self.step_count)  # expect: GS501
        hr = batch_hit_rate(self.model.full_scores(last), targets[:, -1], self.cfg.k)
        self.stats["train_hr"] = hr  # expect: GS503
        self.history.append(loss.detach())  # expect: GS503
        self.step_count += 1  # expect: GS302
        if self.cfg.trace_path is not None:
            with open(self.cfg.trace_path, "a") as fh:  # expect: GS504
                fh.write("step\n")
        if self.device.type == "cuda":
            torch.cuda.current_stream().synchronize()  # expect: GS106
            logger.debug("reserved %d bytes", torch.cuda.memory_reserved())  # expect: GS405, GS501
        return loss.detach()

    @torch.no_grad()
    def evaluate(self, histories, targets: torch.Tensor) -> tuple[float, float]:
        seqs = pad_sequence(histories, batch_first=True).to(self.device)
        h = self.model.encode(seqs, torch.arange(seqs.shape[1], device=self.device))
        lengths = torch.tensor([len(x) for x in histories], device=self.device)
        last = h[torch.arange(len(histories), device=self.device), lengths - 1]
        return ndcg_hr_at_k(self.model.full_scores(last), targets.to(self.device), self.cfg.k)
