"""Confusion-matrix accumulation and mean IoU."""

from __future__ import annotations

import torch


class ConfusionMatrix:
    def __init__(self, n_classes: int, ignore_index: int, device: torch.device):
        self.n = n_classes
        self.ignore_index = ignore_index
        self.mat = torch.zeros(n_classes, n_classes, dtype=torch.long, device=device)

    def update(self, pred: torch.Tensor, target: torch.Tensor) -> None:
        valid = target != self.ignore_index
        t = target[valid]  # expect: GS108
        p = pred[valid]  # expect: GS108
        self.mat.add_(torch.bincount(t * self.n + p, minlength=self.n * self.n).view(self.n, self.n))  # expect: GS107

    def reset(self) -> None:
        self.mat.zero_()

    def iou(self) -> torch.Tensor:
        m = self.mat.double()
        diag = m.diagonal()
        return diag / (m.sum(0) + m.sum(1) - diag)

    def mean_iou(self) -> float:
        iou = self.iou()
        return float(iou[~iou.isnan()].mean())
