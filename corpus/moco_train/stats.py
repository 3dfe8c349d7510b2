from __future__ import annotations

import torch


class AverageMeter:
    def __init__(self, name: str):
        self.name = name
        self.sum = 0.0
        self.count = 0

    def record(self, val: float, n: int = 1) -> None:
        self.sum += val * n  # expect: GS302
        self.count += n  # expect: GS302

    @property
    def avg(self) -> float:
        return self.sum / max(self.count, 1)


@torch.no_grad()
def accuracy_at_k(logits: torch.Tensor, target: torch.Tensor, topk: tuple[int, ...] = (1,)) -> list[torch.Tensor]:
    maxk = max(topk)
    batch_size = int(target.numel())
    _, pred = logits.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    res = []
    for k in topk:
        correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
        res.append(correct_k.mul_(100.0 / batch_size))
    return res
