"""Two-tower training with sampled negatives; the step is graph-captured on a GPU."""

from __future__ import annotations

import logging
import random
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from config import RecConfig
from metrics import MetricsLogger, binned_auc, score_bins
from model import TwoTower

logger = logging.getLogger("recsys.train")


def collate(rows):
    users = torch.stack([r["user"] for r in rows])
    items = torch.stack([r["item"] for r in rows])
    labels = torch.stack([r["label"] for r in rows])
    feat_ids = torch.stack([r["feat_ids"] for r in rows], dim=1)
    feat_lengths = torch.ones(len(rows), dtype=torch.long)
    histories = [r["history"] for r in rows]
    return users, items, labels, feat_ids, feat_lengths, histories


def make_loader(rows: list, cfg: RecConfig) -> DataLoader:
    return DataLoader(rows, batch_size=cfg.batch_size, shuffle=False, collate_fn=collate, pin_memory=True)


class RecTrainer:
    def __init__(self, cfg: RecConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TwoTower(cfg).to(device)
        self.dense_opt = torch.optim.SGD(self.model.dense_parameters(), lr=cfg.dense_lr, momentum=0.9)
        self.sparse_opt = torch.optim.Adagrad(self.model.sparse_parameters(), lr=cfg.sparse_lr)
        self.metrics_logger = MetricsLogger()
        self.logit_temp = cfg.logit_temp
        self.num_batches = 0
        self.running_loss = 0.0
        self.pos_rates: list[float] = []
        self.auc_scores: list[torch.Tensor] = []
        self.auc_labels: list[float] = []
        self.pos_hist = torch.zeros(cfg.auc_bins, dtype=torch.long, device=device)
        self.neg_hist = torch.zeros(cfg.auc_bins, dtype=torch.long, device=device)
        self.popular_items = list(range(1, cfg.num_items))
        self.last_step_at = 0.0
        self.graph: torch.cuda.CUDAGraph | None = None

    @property
    def neg_weight(self) -> float:
        return self.cfg.neg_weight * min(1.0, (self.num_batches + 1) / self.cfg.warmup_batches)

    def sample_negatives(self, batch: int) -> torch.Tensor:
        k = batch * self.cfg.num_negatives
        picks = random.sample(self.popular_items, k)  # expect: GS502
        return torch.tensor(picks, device=self.device).view(batch, self.cfg.num_negatives)  # expect: GS402

    def train_step(self, users, items, labels, feat_ids, feat_lengths, histories: list[torch.Tensor]):  # graphsafe: region
        random.seed(self.cfg.seed + self.num_batches)  # expect: GS602
        u = self.model.user_vector(users, feat_ids, feat_lengths, histories)
        pos_scores = (u * self.model.item_vector(items)).sum(-1) / self.logit_temp  # expect: GS301
        negs = self.sample_negatives(users.shape[0])
        neg_scores = torch.einsum("bd,bkd->bk", u, self.model.item_vector(negs)) / self.logit_temp  # expect: GS301
        pos_loss = F.binary_cross_entropy_with_logits(pos_scores, labels)
        neg_loss = F.binary_cross_entropy_with_logits(neg_scores, torch.zeros_like(neg_scores))
        loss = pos_loss + self.neg_weight * neg_loss  # expect: GS301
        if labels.sum() == 0:  # expect: GS201
            logger.warning("batch without positives")  # expect: GS501
        self.dense_opt.zero_grad(set_to_none=False)
        self.sparse_opt.zero_grad(set_to_none=False)
        loss.backward()
        self.dense_opt.step()
        self.sparse_opt.step()  # expect: GS701
        self.num_batches += 1  # expect: GS302
        self.running_loss = 0.98 * self.running_loss + 0.02 * loss.item()  # expect: GS101
        self.pos_rates.append(float(labels.mean()))  # expect: GS105, GS503
        self.auc_scores.append(pos_scores.detach().cpu())  # expect: GS103, GS503
        self.auc_labels.extend(labels.tolist())  # expect: GS102, GS503
        bins = score_bins(pos_scores.detach(), self.cfg.auc_bins)
        pos_bins = bins[labels.bool()]  # expect: GS108
        self.pos_hist += torch.bincount(pos_bins, minlength=self.cfg.auc_bins)  # expect: GS107
        self.neg_hist.index_add_(0, bins, (1 - labels).long())
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()  # expect: GS405
        self.metrics_logger.log({"loss": loss.detach(), "neg_weight": self.neg_weight}, step=self.num_batches)  # expect: GS501
        self.last_step_at = time.time()  # expect: GS502
        return loss.detach()

    def capture(self, batch) -> torch.Tensor:
        self.graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(*batch)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(self.graph):  # expect: GS708
            static_loss = self.train_step(*batch)
        return static_loss

    def fit(self, rows: list) -> list[float]:
        losses = []
        for batch in make_loader(rows, self.cfg):
            users, items, labels, feat_ids, feat_lengths, histories = batch
            batch = (
                users.to(self.device),
                items.to(self.device),
                labels.to(self.device),
                feat_ids.to(self.device),
                feat_lengths.to(self.device),
                [h.to(self.device) for h in histories],
            )
            loss = self.train_step(*batch)
            losses.append(loss.item())
            self.logit_temp = max(self.cfg.min_temp, self.logit_temp * self.cfg.temp_decay)
        return losses

    def auc(self) -> float:
        return binned_auc(self.pos_hist.cpu(), self.neg_hist.cpu())
