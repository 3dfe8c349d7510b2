"""ViT trainer: one optimisation step, captured as a CUDA graph on the GPU."""

from __future__ import annotations

import logging
import random
import time
from collections import defaultdict

import torch

from config import TrainConfig
from ema import ModelEma
from losses import clip_gradients, smoothed_cross_entropy
from metrics import AccuracyMeter
from model import VisionTransformer
from schedule import CosineSchedule

logger = logging.getLogger("vit.train")


class ViTTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = VisionTransformer(cfg.model).to(device)
        self.opt = torch.optim.SGD(
            self.model.parameters(),
            lr=cfg.optim.base_lr,
            momentum=cfg.optim.momentum,
            weight_decay=cfg.optim.weight_decay,
            nesterov=True,
        )
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.use_amp and device.type == "cuda")
        self.schedule = CosineSchedule(cfg.optim)
        self.ema = ModelEma(self.model, cfg.ema_decay)
        self.meter = AccuracyMeter(cfg.model.num_classes)
        self.history: dict[str, list] = defaultdict(list)
        self.loss_curve: list[torch.Tensor] = []
        self.global_step = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        shape = (cfg.batch_size, 3, cfg.model.image_size, cfg.model.image_size)
        self.static_images = torch.zeros(shape, device=device)
        self.static_labels = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        self.static_loss: torch.Tensor | None = None

    def _mix(self, images: torch.Tensor, labels: torch.Tensor):
        targets = torch.nn.functional.one_hot(labels, num_classes=self.cfg.model.num_classes).float()
        if random.random() < self.cfg.mixup_prob:  # expect: GS502
            lam = random.betavariate(self.cfg.mixup_alpha, self.cfg.mixup_alpha)  # expect: GS502
            images = lam * images + (1.0 - lam) * images.flip(0)  # expect: GS301 (a host draw's number, frozen where it enters device work)
            targets = lam * targets + (1.0 - lam) * targets.flip(0)  # expect: GS301 (a host draw's number, frozen where it enters device work)
        return images, targets

    def train_step(self, images: torch.Tensor, labels: torch.Tensor, lr: float) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        torch.manual_seed(self.cfg.seed + self.global_step)  # expect: GS602
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        self.model.train()
        images, targets = self._mix(images, labels)
        logits = self.model(images)
        loss = smoothed_cross_entropy(logits, targets, self.cfg.label_smoothing)
        self.opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        grad_norm = clip_gradients(self.model.parameters(), self.cfg.optim.max_grad_norm)
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.ema.update(self.model)
        acc = self.meter.update(logits.detach(), labels)
        self.global_step += 1  # expect: GS302
        if self.global_step % self.cfg.log_every == 0:  # expect: GS301
            logger.info(f"step {self.global_step} loss {loss:.4f} lr {lr:.2e}")  # expect: GS104, GS501
            self.history["loss"].append(loss.item())  # expect: GS101, GS503
            self.history["grad_norm"].append(grad_norm.detach())  # expect: GS503
        peak_mb = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0  # expect: GS405
        self.history["step_time"].append(time.perf_counter() - t0)  # expect: GS502, GS503
        self.history["peak_mb"].append(peak_mb)  # expect: GS503
        return loss.detach() + 0.0 * acc

    def capture(self) -> None:
        self.graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_images, self.static_labels, self.cfg.optim.base_lr)
        torch.cuda.current_stream().wait_stream(side)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_images, self.static_labels, self.schedule(0))

    def fit(self, batches) -> list[float]:
        losses: list[float] = []
        for step, (images, labels) in enumerate(batches):
            lr = self.schedule(step)
            if self.device.type == "cuda":
                if self.graph is None:
                    self.static_images.copy_(images)
                    self.static_labels.copy_(labels)
                    self.capture()
                self.static_images.copy_(images, non_blocking=True)
                self.static_labels = labels.to(self.device, non_blocking=True)  # expect: GS401
                self.graph.replay()
                self.loss_curve.append(self.static_loss)  # expect: GS407
                losses.append(float(self.static_loss))
            else:
                with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=self.cfg.use_amp):
                    loss = self.train_step(images.to(self.device), labels.to(self.device), lr)
                losses.append(loss.item())
                self.loss_curve.append(loss)
        return losses
