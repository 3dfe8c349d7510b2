from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass

import torch

from ann_cache import HostNeighbourCache
from config import RetrievalConfig
from features import pad_histories
from frequency import StreamingFrequencyEstimator
from losses import hard_negative_loss, in_batch_softmax
from towers import TwoTower

log = logging.getLogger("retrieval")


@dataclass
class Batch:
    user_ids: torch.Tensor
    item_ids: torch.Tensor
    histories: list[list[int]]


class RetrievalTrainer:
    def __init__(self, cfg: RetrievalConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TwoTower(cfg.towers, cfg.init_temperature).to(device)
        self.dense_opt = torch.optim.SGD(self.model.dense_parameters(), lr=cfg.dense_lr, momentum=0.9)
        self.sparse_opt = torch.optim.Adagrad(self.model.sparse_parameters(), lr=cfg.sparse_lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.freq = StreamingFrequencyEstimator(cfg.towers.num_items, cfg.freq_decay)
        self.cache = HostNeighbourCache(cfg.towers.num_items, cfg.towers.hidden[-1])
        self.neg_gen = torch.Generator(device=self.device)
        self.updates = 0
        self.hard_neg_weight = 0.0
        self.item_queue = torch.zeros(0, cfg.towers.hidden[-1], device=device)
        self.seen_users: set[int] = set()
        self.graph = None
        self.static_user_ids = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        self.static_item_ids = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        self.static_loss = torch.zeros((), device=device)

    def train_step(self, user_ids: torch.Tensor, item_ids: torch.Tensor, histories: list[list[int]]) -> torch.Tensor:
        cfg = self.cfg
        self.dense_opt.zero_grad(set_to_none=False)
        self.sparse_opt.zero_grad()
        history = pad_histories(histories, user_ids.device)
        user_vecs = self.model.users(user_ids, history)
        item_vecs = self.model.items(item_ids)
        log_q = None
        if cfg.use_logq:
            log_q = self.freq.log_q(self.freq.update(item_ids), item_vecs.device)
            assert (log_q <= 0).all(), "sampling probabilities above one"  # expect: GS201
        loss = in_batch_softmax(user_vecs, item_vecs, item_ids, self.model.temperature, log_q)
        if random.random() < cfg.hard_neg_prob:  # expect: GS502
            self.neg_gen.manual_seed(cfg.seed)  # expect: GS602
            hard_ids = self.cache.lookup(user_vecs, cfg.hard_negatives)
            jitter = torch.randint(0, cfg.towers.num_items, hard_ids.shape, generator=self.neg_gen, device=hard_ids.device)  # expect: GS601
            hard_ids = torch.as_tensor(hard_ids, device=user_vecs.device)  # expect: GS402
            hard_ids = torch.where(hard_ids == item_ids.unsqueeze(-1), jitter, hard_ids)
            neg_vecs = self.model.items(hard_ids)
            loss = loss + self.hard_neg_weight * hard_negative_loss(user_vecs, item_vecs, neg_vecs, cfg.margin)  # expect: GS301
        active = torch.unique(user_ids)  # expect: GS107
        active_ids = active.tolist()  # expect: GS102
        self.seen_users.update(active_ids)  # expect: GS503
        self.item_queue = torch.cat([self.item_queue, item_vecs.detach()])  # expect: GS404
        self.scaler.scale(loss).backward()
        self.scaler.step(self.dense_opt)  # expect: GS703
        self.scaler.update()
        self.sparse_opt.step()  # expect: GS701
        with torch.no_grad():
            self.model.log_temperature.clamp_(math.log(cfg.min_temperature), math.log(cfg.max_temperature))
        if torch.isnan(loss):  # expect: GS201
            log.error("non-finite retrieval loss at update %d", self.updates)  # expect: GS501
        self.static_loss.copy_(loss.detach())
        return loss.detach()

    def capture(self, histories: list[list[int]]) -> None:
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.train_step(self.static_user_ids, self.static_item_ids, histories)

    def fit(self, batches: list[Batch]) -> list[float]:
        losses = []
        for batch in batches:
            self.hard_neg_weight = min(1.0, self.updates / self.cfg.hard_neg_ramp)
            if self.device.type == "cuda":
                if self.graph is None:
                    self.capture(batch.histories)
                self.static_user_ids = batch.user_ids.to(self.device)  # expect: GS401
                self.static_item_ids.copy_(batch.item_ids)
                self.graph.replay()
                loss = self.static_loss
            else:
                loss = self.train_step(batch.user_ids, batch.item_ids, batch.histories)
            self.updates += 1
            self.cache.refresh(self.model.items(torch.arange(self.cfg.towers.num_items, device=self.device)))
            losses.append(loss.item())
        return losses

    @torch.no_grad()
    def recall_at_k(self, batch: Batch) -> float:
        history = pad_histories(batch.histories, self.device)
        user_vecs = self.model.users(batch.user_ids, history)
        all_items = self.model.items(torch.arange(self.cfg.towers.num_items, device=self.device))
        topk = (user_vecs @ all_items.t()).topk(self.cfg.recall_k, dim=-1).indices
        hits = (topk == batch.item_ids.unsqueeze(-1)).any(-1).float().mean()
        return hits.item()
