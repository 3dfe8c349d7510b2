from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F

from config import GNNConfig
from metrics import MetricTracker, accuracy, class_histogram
from model import GraphClassifier
from sampler import GraphBatch, NeighbourSampler

logger = logging.getLogger(__name__)


class GNNTrainer:
    def __init__(self, cfg: GNNConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = GraphClassifier(cfg).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.tracker = MetricTracker(cfg.metrics)
        self.current_lr = cfg.lr
        self.class_counts = torch.zeros(cfg.num_classes, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None

    def lr_at(self, it: int) -> float:
        if it < self.cfg.warmup_iters:
            return self.cfg.lr * (it + 1) / self.cfg.warmup_iters
        return self.cfg.lr * 0.5 * (1 + math.cos(math.pi * min(it, 100) / 100))

    def train_step(self, x, edge_index, batch, y, graph_sizes: list[int], lr: float):  # graphsafe: region
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        logits = self.model(x, edge_index, batch, graph_sizes)
        class_weights = torch.tensor(self.cfg.class_weights, device=logits.device)  # expect: GS402
        loss = F.cross_entropy(logits, y, weight=class_weights)
        if loss > self.cfg.spike_threshold:  # expect: GS201
            logger.warning("loss spike, skipping scale")  # expect: GS501
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()  # expect: GS701
        self.class_counts.add_(class_histogram(logits.argmax(-1), self.cfg.num_classes))
        self.tracker.update("loss", loss)  # expect: GS503
        self.tracker.update("acc", accuracy(logits, y))  # expect: GS503
        self.tracker.step()
        return loss.detach()

    def _capture(self, first: GraphBatch) -> None:
        self.static_x, self.static_edge_index = first.x.clone(), first.edge_index.clone()
        self.static_batch, self.static_y = first.batch.clone(), first.y.clone()
        self.static_sizes = list(first.graph_sizes)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.cfg.warmup_iters):
                self.train_step(first.x, first.edge_index, first.batch, first.y, first.graph_sizes, self.current_lr)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self.train_step(
                self.static_x, self.static_edge_index, self.static_batch, self.static_y,
                self.static_sizes, self.current_lr,
            )

    def fit(self, sampler: NeighbourSampler, iterations: int) -> list[torch.Tensor]:
        losses: list[torch.Tensor] = []
        for it in range(iterations):
            self.current_lr = self.lr_at(it)
            batch = sampler.next_batch()
            if self.device.type == "cuda":
                batch = batch.to(self.device)
                if self.graph is None:
                    self._capture(batch)
                self.static_x.copy_(batch.x)
                self.static_batch.copy_(batch.batch)
                self.static_edge_index.copy_(batch.edge_index)
                self.static_y = batch.y  # expect: GS401
                self.graph.replay()
                losses.append(self.static_loss)  # expect: GS407
            else:
                loss = self.train_step(batch.x, batch.edge_index, batch.batch, batch.y, batch.graph_sizes, self.current_lr)
                losses.append(loss)
            if it % 10 == 0:
                logger.info("iter %d loss %.4f", it, losses[-1].item())
        return losses
