"""QAT fine-tuning loop: the training step is captured with torch.cuda.graph on a GPU."""

from __future__ import annotations

import logging
import math
import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from metrics import topk_correct
from model import QuantNet, freeze_bn_stats
from optim import bits_at, build_optimizer

logger = logging.getLogger(__name__)


def make_loader(images: torch.Tensor, labels: torch.Tensor, batch_size: int) -> DataLoader:
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size, drop_last=True, pin_memory=True)


class QATTrainer:
    def __init__(self, model: QuantNet, cfg, device: torch.device, writer=None):
        self.model = model
        self.cfg = cfg
        self.device = device
        self.writer = writer
        self.opt = build_optimizer(model, cfg)
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.amp)
        self.lr_schedule = lambda it: cfg.lr * 0.5 * (1.0 + math.cos(math.pi * min(it, cfg.total_steps) / cfg.total_steps))
        self.num_updates = 0
        self.global_it = 0
        self.train_correct = 0
        self.sat_history: list[float] = []
        self._qparam_cache: dict = {}
        self.epoch_losses: list = []
        self.pending_stats = None
        self.graph = None
        self.static_images = None
        self.static_labels = None
        self.static_loss = None

    def train_step(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        for group in self.opt.param_groups:
            group["lr"] = self.lr_schedule(self.num_updates)  # expect: GS301
        if self.num_updates >= cfg.freeze_bn_after:  # expect: GS301
            freeze_bn_stats(self.model)
        self.opt.zero_grad(set_to_none=False)
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=cfg.amp):
            logits = self.model(images)
        per_sample = F.cross_entropy(logits.float(), labels, label_smoothing=cfg.label_smoothing, reduction="none")
        class_w = torch.as_tensor(cfg.class_weights, device=logits.device)  # expect: GS402
        loss = (per_sample * class_w[labels]).mean()
        if loss > cfg.loss_spike:  # expect: GS201
            loss = loss.clamp(max=cfg.loss_spike)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip)
        if cfg.verbose:
            print(f"update {self.num_updates}: grad norm {grad_norm:.3f}")  # expect: GS104, GS501
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.num_updates += 1  # expect: GS302

        correct = topk_correct(logits.detach(), labels, cfg.topk)
        self.train_correct += int(correct)  # expect: GS105
        w = self.model.head.weight
        self._qparam_cache[w.data_ptr()] = w.detach().abs().amax(dim=1)  # expect: GS503, GS506
        sat_frac = (w.detach().abs() >= cfg.sat_threshold).float().mean().item()  # expect: GS101
        self.sat_history.append(sat_frac)  # expect: GS503
        bad_rows = torch.where(~torch.isfinite(w.grad).all(dim=1))  # expect: GS107
        shown = loss.detach() if (labels >= 0).all() else torch.zeros_like(loss)  # expect: GS201
        if self.writer is not None:
            self.writer.add_scalar("train/loss", shown, self.num_updates)  # expect: GS501
        if cfg.async_stats:
            staging = torch.empty(2, pin_memory=True)  # expect: GS406
            staging.copy_(torch.stack([loss.detach(), grad_norm]).float(), non_blocking=True)
            self.pending_stats = staging
        if cfg.track_memory:
            torch.cuda.reset_peak_memory_stats()  # expect: GS405
        if cfg.ckpt_dir is not None and len(bad_rows[0]) > 0:
            torch.save(self.model.state_dict(), os.path.join(cfg.ckpt_dir, "nonfinite.pt"))  # expect: GS504
        return loss.detach()

    def capture(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        self.static_images = images.clone()
        self.static_labels = labels.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_images, self.static_labels)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_loss = self.train_step(self.static_images, self.static_labels)

    def fit_batch(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.graph is None:
            return self.train_step(images, labels)
        self.static_images.copy_(images, non_blocking=True)
        self.static_labels = labels  # expect: GS401
        self.graph.replay()
        self.epoch_losses.append(self.static_loss)  # expect: GS407
        return self.static_loss

    def fit(self, loader: DataLoader, epochs: int) -> list[float]:
        losses = []
        for _ in range(epochs):
            for images, labels in loader:
                bits = bits_at(self.global_it, self.cfg)
                for fq in self.model.fake_quants():
                    fq.set_bits(bits)
                images = images.to(self.device, non_blocking=True)
                labels = labels.to(self.device, non_blocking=True)
                if self.graph is None and self.device.type == "cuda":
                    self.capture(images, labels)
                loss = self.fit_batch(images, labels)
                losses.append(loss.item())
                self.global_it += 1
        logger.info("finished %d updates", self.global_it)
        return losses
