"""Running accuracy and per-class statistics."""

from __future__ import annotations

import torch


class AccuracyMeter:
    def __init__(self, num_classes: int):
        self.num_classes = num_classes
        self.correct = 0
        self.seen = 0
        self.per_class = torch.zeros(num_classes)
        self.top5_hits: list[int] = []

    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        pred = logits.argmax(dim=-1)
        hits = pred == labels
        self.correct += int(hits.sum())  # expect: GS105
        self.seen += labels.shape[0]  # expect: GS302
        self.per_class += torch.bincount(labels[hits], minlength=self.num_classes).to(self.per_class)  # expect: GS107, GS108
        k = min(5, logits.shape[-1])
        top5 = logits.topk(k, dim=-1).indices
        in_top5 = (top5 == labels[:, None]).any(dim=-1)
        self.top5_hits.extend(in_top5.tolist())  # expect: GS102, GS503
        return hits.float().mean()

    @property
    def accuracy(self) -> float:
        return self.correct / max(self.seen, 1)
