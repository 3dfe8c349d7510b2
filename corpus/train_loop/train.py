"""Training loop for the residual MLP: AdamW, warm-up + cosine lr, grad clipping, per-step logging.
The step is captured with torch.cuda.graph on a GPU (static input buffers, side-stream warm-up),
run eagerly on CPU."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import torch
from torch.nn.utils import clip_grad_norm_

from model import MLPClassifier, ModelConfig

log = logging.getLogger("train_loop")


@dataclass
class TrainConfig:
    batch_size: int = 16
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 2
    max_steps: int = 20
    clip: float = 1.0
    strict_clip: bool = True  # raise on inf/nan grads instead of silently clipping them
    loss_spike: float = 5.0
    warmup_iters_before_capture: int = 3
    model: ModelConfig = field(default_factory=ModelConfig)


def lr_at(cfg: TrainConfig, it: int) -> float:
    if it < cfg.warmup:
        return cfg.lr * (it + 1) / cfg.warmup
    progress = min(1.0, (it - cfg.warmup) / max(1, cfg.max_steps - cfg.warmup))
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + math.cos(math.pi * progress))


class Trainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = MLPClassifier(cfg.model).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.01)
        self.step = 0
        self.losses: list[float] = []
        self.step_times: list[float] = []

    def train_step(self, x: torch.Tensor, y: torch.Tensor, lr: float):
        t0 = time.perf_counter()  # expect: GS502
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        logits, loss = self.model(x, y)
        if loss > self.cfg.loss_spike:  # expect: GS201
            log.warning("loss spike %.3f at step %d", loss.item(), self.step)  # expect: GS101, GS501
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.strict_clip:
            grad_norm = clip_grad_norm_(self.model.parameters(), self.cfg.clip, error_if_nonfinite=True)  # expect: GS110
        else:
            grad_norm = clip_grad_norm_(self.model.parameters(), self.cfg.clip)
        self.opt.step()  # expect: GS701
        acc = (logits.argmax(dim=-1) == y).float().mean()
        self.step += 1  # expect: GS302
        self.losses.append(loss.item())  # expect: GS101, GS503
        print(f"step {self.step} loss {loss:.4f} grad_norm {grad_norm:.3f} lr {lr:.2e}")  # expect: GS104, GS501
        if x.is_cuda:
            torch.cuda.synchronize()  # expect: GS106
        self.step_times.append(time.perf_counter() - t0)  # expect: GS502, GS503
        return loss.detach(), acc


def synthetic_batches(cfg: TrainConfig, seed: int):
    """A fixed random 'teacher' labels Gaussian inputs: learnable, deterministic, no downloads."""
    gen = torch.Generator().manual_seed(seed + 1)
    teacher = torch.randn(cfg.model.in_dim, cfg.model.n_classes, generator=gen)
    while True:
        x = torch.randn(cfg.batch_size, cfg.model.in_dim, generator=gen)
        y = (x @ teacher).argmax(dim=-1)
        yield x, y


def train(cfg: TrainConfig, steps: int, seed: int, device: torch.device) -> Trainer:
    torch.manual_seed(seed)
    trainer = Trainer(cfg, device)
    batches = synthetic_batches(cfg, seed)

    if device.type == "cuda":
        static_x = torch.zeros(cfg.batch_size, cfg.model.in_dim, device=device)
        static_y = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(cfg.warmup_iters_before_capture):
                trainer.train_step(static_x, static_y, lr_at(cfg, 0))
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss, static_acc = trainer.train_step(static_x, static_y, lr_at(cfg, 0))
        for it in range(steps):
            x, y = next(batches)
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            trainer.last_loss, trainer.last_acc = static_loss.clone(), static_acc.clone()
    else:
        trainer.model.train()
        for it in range(steps):
            x, y = next(batches)
            loss, acc = trainer.train_step(x.to(device), y.to(device), lr_at(cfg, it))
            trainer.last_loss, trainer.last_acc = loss, acc
    return trainer


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t = train(TrainConfig(), steps=10, seed=0, device=dev)
    print("final loss", float(t.last_loss), "param norm", t.model.param_norm())
