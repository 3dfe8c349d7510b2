"""Per-class intersection-over-union, accumulated on the device."""

from __future__ import annotations

import torch


class IoUMeter:
    def __init__(self, num_classes: int, device: torch.device):
        self.num_classes = num_classes
        self.intersection = torch.zeros(num_classes, device=device)
        self.union = torch.zeros(num_classes, device=device)
        self.per_batch: list[list[float]] = []

    def update(self, pred: torch.Tensor, target: torch.Tensor, valid: torch.Tensor) -> None:
        keep = valid > 0.5
        if not keep.any():  # expect: GS201
            return
        p, t = pred[keep], target[keep]  # expect: GS108
        hit = t[p == t]  # expect: GS108
        area_inter = torch.bincount(hit, minlength=self.num_classes).float()  # expect: GS107
        area_sum = (torch.bincount(p, minlength=self.num_classes) + torch.bincount(t, minlength=self.num_classes)).float()  # expect: GS107
        self.intersection.add_(area_inter)
        self.union.add_(area_sum - area_inter)
        self.per_batch.append((area_inter / (area_sum - area_inter).clamp(min=1.0)).tolist())  # expect: GS102, GS503

    def miou(self) -> float:
        iou = self.intersection / self.union.clamp(min=1.0)
        return float(iou.mean())
