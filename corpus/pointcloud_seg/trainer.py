"""Training loop of the segmentation model; `train_step` is the captured unit."""

from __future__ import annotations

import logging

import torch
from torch.utils.data import DataLoader

from augment import CloudAugmenter
from config import SegConfig
from data import ToyParts, label_frequencies, pad_collate
from losses import valid_mask, weighted_seg_loss
from metrics import IoUMeter
from model import PointNet2Seg
from progress import ProgressLine
from schedule import bn_momentum_at, set_bn_momentum, step_lr

logger = logging.getLogger(__name__)


def make_loader(dataset: ToyParts, batch_size: int, seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    return DataLoader(
        dataset, batch_size=batch_size, shuffle=True, collate_fn=pad_collate, generator=g, pin_memory=True
    )


class SegTrainer:
    def __init__(self, cfg: SegConfig, dataset: ToyParts, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = PointNet2Seg(cfg).to(device)
        self.opt = torch.optim.SGD(
            self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.amp)
        freqs = label_frequencies(dataset, cfg.num_classes)
        raw = [1.0 / (f + 0.02) for f in freqs]
        self.class_weights = torch.tensor([w * len(raw) / sum(raw) for w in raw])
        self.augmenter = CloudAugmenter(cfg.jitter_sigma, cfg.jitter_clip, device, cfg.seed)
        self.iou = IoUMeter(cfg.num_classes, device)
        self.pbar = ProgressLine(total=0)
        self.loss_trace = torch.zeros(cfg.trace_len, device=device)
        self.global_step = 0
        self.lr = cfg.lr
        self.graph = None
        self.static_points = None
        self.static_labels = None
        self.static_counts: list[int] = []
        self.static_loss = None
        self.last_pred = None

    def train_step(self, points: torch.Tensor, labels: torch.Tensor, counts: list[int], lr: float) -> torch.Tensor:
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        valid = valid_mask(counts, points.device)
        if self.cfg.augment:
            points = self.augmenter.apply(points)
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.cfg.amp):
            logits = self.model(points)
        weights = self.class_weights.to(logits.device)  # expect: GS402
        loss = weighted_seg_loss(logits.float(), labels, valid, weights)
        if self.cfg.skip_nonfinite and not torch.isfinite(loss).all():  # expect: GS201
            return loss.detach()
        self.opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm)
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        pred = logits.detach().argmax(-1)
        self.iou.update(pred, labels, valid)
        if self.device.type == "cuda":
            host_pred = torch.empty(pred.shape, dtype=pred.dtype, pin_memory=True)  # expect: GS406
            host_pred.copy_(pred, non_blocking=True)
            self.last_pred = host_pred
        self.loss_trace[self.global_step % self.cfg.trace_len] = loss.detach()  # expect: GS301
        self.global_step += 1  # expect: GS302
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()  # expect: GS405
        self.pbar.set_postfix(step=self.global_step, lr=lr)  # expect: GS505, GS503
        logger.debug("step %d done, lr %.4f", self.global_step, lr)  # expect: GS501
        if self.cfg.save_every and self.global_step % self.cfg.save_every == 0:  # expect: GS301
            snapshot = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            torch.save(snapshot, self.cfg.ckpt_path)  # expect: GS504
        return loss.detach()

    def capture(self, points: torch.Tensor, labels: torch.Tensor, counts: list[int]) -> None:
        self.static_points = points.to(self.device)
        self.static_labels = labels.to(self.device)
        self.static_counts = list(counts)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_loss = self.train_step(self.static_points, self.static_labels, self.static_counts, self.lr)

    def fit(self, loader: DataLoader, epochs: int, losses: list) -> None:
        self.pbar.total = epochs * len(loader)
        for epoch in range(epochs):
            self.lr = step_lr(epoch, self.cfg.lr, self.cfg.lr_decay, self.cfg.decay_step, self.cfg.lr_floor)
            momentum = bn_momentum_at(
                epoch, self.cfg.bn_momentum, self.cfg.bn_decay, self.cfg.bn_decay_step, self.cfg.bn_momentum_floor
            )
            set_bn_momentum(self.model, momentum)
            self.model.train()
            for points, labels, counts in loader:
                if self.graph is not None and points.shape == self.static_points.shape:
                    self.static_points = points.to(self.device)  # expect: GS401
                    self.static_labels.copy_(labels)
                    self.graph.replay()
                    losses.append(self.static_loss)  # expect: GS407
                else:
                    loss = self.train_step(points.to(self.device), labels.to(self.device), counts, self.lr)
                    losses.append(loss)
                self.pbar.update(1)
            logger.info("epoch %d: loss %.4f, mIoU %.3f", epoch, losses[-1].item(), self.iou.miou())
