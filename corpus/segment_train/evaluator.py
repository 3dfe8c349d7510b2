"""Evaluation: padded batches, sliding-window TTA, confusion matrix."""

from __future__ import annotations

import os
import time

import torch

from config import SegConfig
from inference import flip_tta
from metrics import ConfusionMatrix


class Evaluator:
    def __init__(self, model: torch.nn.Module, cfg: SegConfig, device: torch.device):
        self.model = model
        self.cfg = cfg
        self.device = device
        self.confmat = ConfusionMatrix(cfg.n_classes, cfg.ignore_index, device)
        self.predictions: list[torch.Tensor] = []
        self.timings: list[float] = []
        self._tta_cache: dict = {}
        self.step = self.eval_step
        if device.type == "cuda":
            self.step = torch.compile(self.eval_step, mode="reduce-overhead")

    def pad_batch(self, images: list[torch.Tensor], targets: list[torch.Tensor]):
        max_h = max(im.shape[-2] for im in images)
        max_w = max(im.shape[-1] for im in images)
        batch = images[0].new_zeros(len(images), 3, max_h, max_w)  # expect: GS408
        labels = targets[0].new_full((len(targets), max_h, max_w), self.cfg.ignore_index)  # expect: GS408
        for i, (im, tg) in enumerate(zip(images, targets)):
            batch[i, :, : im.shape[-2], : im.shape[-1]] = im
            labels[i, : tg.shape[-2], : tg.shape[-1]] = tg
        return batch, labels

    def eval_step(self, images: list[torch.Tensor], targets: list[torch.Tensor]) -> torch.Tensor:
        start = time.process_time()  # expect: GS502
        batch, labels = self.pad_batch(images, targets)
        key = id(images[0])  # expect: GS506
        probs = self._tta_cache.get(key)
        if probs is None:
            probs = flip_tta(self.model, batch, self.cfg.n_classes, self.cfg.window, self.cfg.stride, self.cfg.flip_tta)
            self._tta_cache[key] = probs  # expect: GS503
        pred = probs.argmax(1)
        self.confmat.update(pred, labels)
        if self.cfg.keep_predictions:
            staging = torch.empty(pred.shape, dtype=torch.uint8, pin_memory=True)  # expect: GS406
            staging.copy_(pred, non_blocking=True)
            self.predictions.append(staging)  # expect: GS503
        if self.cfg.vis_dir:
            os.makedirs(self.cfg.vis_dir, exist_ok=True)  # expect: GS504
        if self.cfg.verbose_eval:
            print(f"[eval] batch of {len(images)} padded to {batch.shape[-2]}x{batch.shape[-1]}")  # expect: GS501
        self.timings.append(time.process_time() - start)  # expect: GS502, GS503
        return pred

    @torch.no_grad()
    def evaluate(self, samples: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
        self.model.eval()
        self.confmat.reset()
        for i in range(0, len(samples), 2):
            chunk = samples[i:i + 2]
            self.step([s[0] for s in chunk], [s[1] for s in chunk])
        self.model.train()
        return self.confmat.mean_iou()
