"""Mixup / CutMix in the timm style: one lam per batch, the batch mixed with its own flip, soft
targets with label smoothing. Python's `random` draws lam and the CutMix box."""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F


def mixup_target(target: torch.Tensor, num_classes: int, lam: float, smoothing: float) -> torch.Tensor:
    off = smoothing / num_classes
    on = 1.0 - smoothing + off
    y1 = F.one_hot(target, num_classes).float() * (on - off) + off
    y2 = F.one_hot(target.flip(0), num_classes).float() * (on - off) + off
    return y1 * lam + y2 * (1.0 - lam)  # expect: GS301 (a host draw's number, frozen where it enters device work)


def cutmix_bbox_and_lam(shape: torch.Size, lam: float):
    H, W = shape[-2], shape[-1]
    cut_rat = math.sqrt(1.0 - lam)
    cut_h, cut_w = int(H * cut_rat), int(W * cut_rat)
    cy = random.randint(0, H - 1)  # expect: GS502
    cx = random.randint(0, W - 1)  # expect: GS502
    y1, y2 = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, H)
    x1, x2 = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, W)
    lam = 1.0 - (y2 - y1) * (x2 - x1) / float(H * W)  # correct lam for the clipped box
    return (y1, y2, x1, x2), lam


class Mixup:
    def __init__(self, num_classes: int, mixup_alpha: float = 0.8, cutmix_alpha: float = 1.0,
                 prob: float = 1.0, switch_prob: float = 0.5, label_smoothing: float = 0.1):
        self.num_classes = num_classes
        self.mixup_alpha = mixup_alpha
        self.cutmix_alpha = cutmix_alpha
        self.mix_prob = prob
        self.switch_prob = switch_prob
        self.label_smoothing = label_smoothing
        self.mixup_enabled = True

    def _params_per_batch(self) -> tuple[float, bool]:
        lam, use_cutmix = 1.0, False
        if self.mixup_enabled and random.random() < self.mix_prob:  # expect: GS502
            use_cutmix = self.cutmix_alpha > 0 and random.random() < self.switch_prob  # expect: GS502
            alpha = self.cutmix_alpha if use_cutmix else self.mixup_alpha
            lam = random.betavariate(alpha, alpha)  # expect: GS502
        return lam, use_cutmix

    def __call__(self, x: torch.Tensor, target: torch.Tensor):
        assert x.size(0) % 2 == 0, "batch size should be even when using this"
        lam, use_cutmix = self._params_per_batch()
        if use_cutmix:
            (y1, y2, x1, x2), lam = cutmix_bbox_and_lam(x.shape, lam)
            x[:, :, y1:y2, x1:x2] = x.flip(0)[:, :, y1:y2, x1:x2]  # expect: GS301 (the drawn CutMix box as slice bounds, through the nested tuple)
        elif lam != 1.0:
            x_flipped = x.flip(0).mul_(1.0 - lam)  # expect: GS301 (a host draw's number, frozen where it enters device work)
            x.mul_(lam).add_(x_flipped)  # expect: GS301 (a host draw's number, frozen where it enters device work)
        return x, mixup_target(target, self.num_classes, lam, self.label_smoothing)
