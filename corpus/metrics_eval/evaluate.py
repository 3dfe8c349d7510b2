"""Validation pass with running metrics. On a GPU the per-batch step (forward, loss, metric
updates) is captured once with torch.cuda.graph and replayed for every batch; on CPU it runs eagerly."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from metrics import MeanMetric, MulticlassAccuracy, MulticlassF1Score
from model import SensorNet


@dataclass
class EvalConfig:
    batch_size: int = 16
    channels: int = 6
    length: int = 32
    n_classes: int = 5
    ignore_index: int = -100
    verbose: bool = True
    collapse_threshold: float = 0.05


class Evaluator:
    def __init__(self, model: SensorNet, cfg: EvalConfig, device: torch.device):
        self.model = model.eval()
        self.cfg = cfg
        self.acc = MulticlassAccuracy(cfg.n_classes, ignore_index=cfg.ignore_index).to(device)
        self.f1 = MulticlassF1Score(cfg.n_classes).to(device)
        self.loss_mean = MeanMetric().to(device)
        self.batch_acc: list[float] = []

    def reset(self) -> None:
        for metric in (self.acc, self.f1, self.loss_mean):
            metric.reset()
        self.batch_acc = []

    @torch.no_grad()
    def eval_step(self, x: torch.Tensor, y: torch.Tensor):
        logits = self.model(x)
        loss = F.cross_entropy(logits, y, ignore_index=self.cfg.ignore_index)
        self.loss_mean.update(loss)
        running_acc = self.acc(logits, y)
        self.f1.update(logits, y)
        self.batch_acc.append(running_acc.item())  # expect: GS101, GS503
        if self.cfg.verbose and running_acc < self.cfg.collapse_threshold:  # expect: GS201
            print("running accuracy collapsed, check the checkpoint")  # expect: GS501
        return loss, running_acc


def synthetic_batches(cfg: EvalConfig, n: int, seed: int):
    gen = torch.Generator().manual_seed(seed + 7)
    proto = torch.randn(cfg.n_classes, cfg.channels, 1, generator=gen)
    for _ in range(n):
        y = torch.randint(0, cfg.n_classes, (cfg.batch_size,), generator=gen)
        x = proto[y] + 0.8 * torch.randn(cfg.batch_size, cfg.channels, cfg.length, generator=gen)
        yield x, y


def evaluate(model: SensorNet, cfg: EvalConfig, n_batches: int, seed: int, device: torch.device) -> dict[str, float]:
    ev = Evaluator(model, cfg, device)
    batches = synthetic_batches(cfg, n_batches, seed)
    if device.type == "cuda":
        static_x = torch.zeros(cfg.batch_size, cfg.channels, cfg.length, device=device)
        static_y = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                ev.eval_step(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        ev.reset()  # the warm-up batches must not count
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss, static_acc = ev.eval_step(static_x, static_y)
        ev.reset()
        for x, y in batches:
            static_x.copy_(x, non_blocking=True)
            static_y = y.to(device, non_blocking=True)  # expect: GS401
            graph.replay()
    else:
        for x, y in batches:
            ev.eval_step(x.to(device), y.to(device))

    # summary, after the loop: host syncs are fine here
    result = {
        "acc": ev.acc.compute().item(),
        "f1": float(ev.f1.compute()),
        "loss": ev.loss_mean.compute().item(),
        "updates": float(ev.acc._update_count),
        "logged": float(sum(ev.batch_acc)),
    }
    if cfg.verbose:
        print(f"val acc {result['acc']:.3f} f1 {result['f1']:.3f} loss {result['loss']:.3f}")
    return result


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    net = SensorNet(EvalConfig.channels, n_classes=EvalConfig.n_classes).to(dev)
    print(evaluate(net, EvalConfig(), n_batches=8, seed=0, device=dev))
