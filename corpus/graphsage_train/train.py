from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from cache import GPUFeatureCache
from config import SAGEConfig
from metrics import MetricsLogger, overall_accuracy, per_class_accuracy
from model import GraphSAGE

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def build_optimizer(model: torch.nn.Module, cfg: SAGEConfig) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, foreach=False)


def lr_at(step: int, base: float, warmup: int) -> float:
    return base * min(1.0, (step + 1) / warmup)


class SAGETrainer:
    def __init__(self, cfg: SAGEConfig, feats: torch.Tensor):
        self.cfg = cfg
        self.device = torch.device(DEVICE)
        self.model = GraphSAGE(cfg.in_dim, cfg.hidden, cfg.n_classes, len(cfg.fanouts)).to(self.device)
        self.opt = build_optimizer(self.model, cfg)
        self.cache = GPUFeatureCache(feats, cfg.cache_size, self.device)
        self.metrics = MetricsLogger()
        self.drop_gen = torch.Generator(device=DEVICE)
        self.drop_gen.manual_seed(cfg.seed)
        self.smoothing = 0.0
        self.drop_p = cfg.drop_p
        self.updates = 0
        self.dup_batches = 0
        self.seen_ptrs: set = set()
        self.class_acc: dict = {}
        self.logit_norm = torch.zeros((), device=self.device)
        self.head_hook = self.model.head.register_forward_pre_hook(self._check_input)  # expect: GS706
        self.graph = None
        self.graphed_head = None

    @staticmethod
    def _check_input(module, args):
        return None

    def end_epoch(self) -> None:
        self.smoothing = min(self.cfg.max_smoothing, self.smoothing + self.cfg.smoothing_step)
        self.drop_p *= self.cfg.drop_decay

    def train_step(self, node_ids: torch.Tensor, layers, labels: torch.Tensor, frontier_sizes: list[int]) -> torch.Tensor:
        started = time.monotonic()  # expect: GS502
        if node_ids.data_ptr() in self.seen_ptrs:  # expect: GS506
            self.dup_batches += 1  # expect: GS302
        self.drop_gen.manual_seed(self.cfg.seed + 17)  # expect: GS602
        x = self.cache.gather(node_ids)
        keep = torch.rand(x.shape, generator=self.drop_gen, device=x.device) > self.drop_p  # expect: GS601, GS301
        x = x * keep / (1.0 - self.cfg.drop_p)
        scratch = x.new_zeros(max(frontier_sizes), self.cfg.hidden)  # expect: GS408
        h = self.model(x, layers)
        h = h if torch.isfinite(h).all() else torch.nan_to_num(h)  # expect: GS201
        logits = self.model.head(h[: labels.shape[0]] + scratch[: labels.shape[0]])
        if logits.abs().max() > 50.0:  # expect: GS201
            logits = logits.clamp(-50.0, 50.0)
        assert torch.all(labels >= 0), "unlabelled seed in batch"  # expect: GS201
        one_hot = F.one_hot(labels, num_classes=self.cfg.n_classes).float()
        target = one_hot * (1.0 - self.smoothing) + self.smoothing / self.cfg.n_classes  # expect: GS301
        weights = torch.tensor(self.cfg.class_weights, device=logits.device)  # expect: GS402
        loss = -(target * F.log_softmax(logits, -1) * weights).sum(-1).mean()
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        for group in self.opt.param_groups:
            group["lr"] = lr_at(self.updates, self.cfg.lr, self.cfg.warmup)  # expect: GS301
        self.opt.step()  # expect: GS701
        self.updates += 1  # expect: GS302
        self.logit_norm = 0.9 * self.logit_norm + 0.1 * logits.detach().norm()  # expect: GS401
        pred = logits.argmax(-1)
        per_class = per_class_accuracy(pred, labels, self.cfg.n_classes)
        self.class_acc.update(enumerate(per_class))  # expect: GS503
        print(torch.stack(per_class))  # expect: GS104
        self.metrics.log(loss=loss.detach(), seconds=time.monotonic() - started)  # expect: GS501, GS502
        if self.cfg.pin_staging:
            staging = torch.empty(labels.shape[0], self.cfg.n_classes, pin_memory=True)  # expect: GS406
            staging.copy_(logits.detach(), non_blocking=True)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()  # expect: GS405
        return loss.detach()

    def capture(self, node_ids, layers, labels, frontier_sizes):
        self.graphed_head = torch.cuda.make_graphed_callables(
            self.model.head, (torch.zeros(self.cfg.batch_size, self.cfg.hidden, device=self.device),)
        )
        for _ in range(3):
            self.train_step(node_ids, layers, labels, frontier_sizes)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast(device_type="cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
                static_loss = self.train_step(node_ids, layers, labels, frontier_sizes)
        return static_loss

    @torch.no_grad()
    def evaluate(self, node_ids, layers, labels) -> float:
        h = self.model(self.cache.gather(node_ids), layers)
        pred = self.model.head(h[: labels.shape[0]]).argmax(-1).cpu()
        return overall_accuracy(pred, labels.cpu())


def to_layers(block, device):
    index = {int(v): i for i, v in enumerate(block.nodes.tolist())}
    layers = []
    for src, dst in reversed(block.edges):
        layers.append((
            torch.arange(block.nodes.shape[0], device=device),
            torch.arange(block.nodes.shape[0], device=device),
            torch.tensor([index[int(u)] for u in src], dtype=torch.long, device=device),
            torch.tensor([index[int(v)] for v in dst], dtype=torch.long, device=device),
        ))
    return layers


def fit(trainer: SAGETrainer, sampler, labels: torch.Tensor, steps: int, gen: torch.Generator) -> tuple[float, float]:
    cfg = trainer.cfg
    loss, acc = torch.zeros(()), 0.0
    for _ in range(steps):
        seeds = torch.randperm(labels.shape[0], generator=gen)[: cfg.batch_size]
        block = sampler.sample(seeds, labels)
        node_ids = block.nodes.to(trainer.device)
        layers = to_layers(block, trainer.device)
        y = block.labels.to(trainer.device)
        loss = trainer.train_step(node_ids, layers, y, block.frontier_sizes)
        trainer.seen_ptrs.add(node_ids.data_ptr())
        acc = trainer.evaluate(node_ids, layers, y)
        trainer.end_epoch()
    return float(loss.item()), acc
