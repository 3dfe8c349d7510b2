"""Mixed-precision training with mixup/cutmix: GradScaler + autocast, SGD with Nesterov momentum.
On a GPU the whole step (mixing, forward, backward, clipping, optimizer) is captured once with
torch.cuda.graph and replayed; on CPU it runs eagerly."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch
from torch.nn.utils import clip_grad_norm_

from mixup import Mixup
from model import SmallResNet, SoftTargetCrossEntropy


@dataclass
class TrainConfig:
    batch_size: int = 8
    image_size: int = 12
    num_classes: int = 10
    lr: float = 0.05
    clip: float = 2.0
    amp: bool = True
    log_every: int = 1


class Trainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = SmallResNet(cfg.num_classes).to(device).train()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
        self.use_amp = cfg.amp and device.type == "cuda"
        self.amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.use_amp)
        self.mixup = Mixup(cfg.num_classes)
        self.criterion = SoftTargetCrossEntropy(smoothing=0.1)
        self.num_updates = 0
        self.loss_ema = 0.0

    def train_step(self, x: torch.Tensor, y: torch.Tensor):
        x, y_soft = self.mixup(x, y)
        with torch.autocast(device_type=self.device.type, dtype=self.amp_dtype, enabled=self.use_amp):
            logits = self.model(x)
            loss = self.criterion(logits, y_soft)
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        grad_norm = clip_grad_norm_(self.model.parameters(), self.cfg.clip)
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.num_updates += 1  # expect: GS302
        self.loss_ema = 0.98 * self.loss_ema + 0.02 * loss.item()  # expect: GS101
        acc = (logits.argmax(dim=-1) == y).float().mean()
        return loss.detach(), grad_norm, acc


def batches(cfg: TrainConfig, seed: int):
    gen = torch.Generator().manual_seed(seed + 3)
    templates = torch.randn(cfg.num_classes, 3, cfg.image_size, cfg.image_size, generator=gen)
    while True:
        y = torch.randint(0, cfg.num_classes, (cfg.batch_size,), generator=gen)
        yield templates[y] + 0.5 * torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, generator=gen), y


def train(cfg: TrainConfig, steps: int, seed: int, device: torch.device):
    torch.manual_seed(seed)
    random.seed(seed)
    trainer = Trainer(cfg, device)
    data = batches(cfg, seed)
    history: list[dict[str, float]] = []
    if device.type == "cuda":
        static_x = torch.zeros(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device)
        static_y = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                trainer.train_step(static_x.clone(), static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = trainer.train_step(static_x, static_y)
        step_fn = None
    else:
        step_fn = trainer.train_step
    for it in range(steps):
        x, y = next(data)
        if step_fn is None:
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            loss, grad_norm, acc = (t.clone() for t in out)
        else:
            loss, grad_norm, acc = step_fn(x.to(device), y.to(device))
        if it % cfg.log_every == 0:  # logging after the step: syncs are fine here
            history.append({"loss": loss.item(), "grad_norm": float(grad_norm), "acc": acc.item(),
                            "scale": trainer.scaler.get_scale()})
    return trainer, history


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    _, hist = train(TrainConfig(), steps=10, seed=0, device=dev)
    for row in hist:
        print(row)
