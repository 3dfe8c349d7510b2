"""torchmetrics-style running metrics ported into the project: the state lives in registered
buffers (so `.to(device)` moves it), `update` folds a batch in, `compute` reduces."""

from __future__ import annotations

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class Metric(nn.Module):
    """Base class. `forward` updates the running state and returns the running value."""

    def __init__(self, validate_args: bool = True):
        super().__init__()
        self.validate_args = validate_args
        self._update_count = 0
        self._defaults: dict[str, torch.Tensor] = {}

    def add_state(self, name: str, default: torch.Tensor) -> None:
        self.register_buffer(name, default.clone(), persistent=False)
        self._defaults[name] = default

    def reset(self) -> None:
        self._update_count = 0
        for name, default in self._defaults.items():
            getattr(self, name).copy_(default)

    def update(self, *args) -> None:
        raise NotImplementedError

    def compute(self) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, *args) -> torch.Tensor:
        self._update_count += 1  # expect: GS302
        self.update(*args)
        return self.compute()


class MulticlassAccuracy(Metric):
    def __init__(self, num_classes: int, ignore_index: int | None = None, validate_args: bool = True):
        super().__init__(validate_args)
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.add_state("correct", torch.zeros((), dtype=torch.long))
        self.add_state("total", torch.zeros((), dtype=torch.long))

    def _check(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        if preds.shape != target.shape:
            raise ValueError(f"preds {tuple(preds.shape)} and target {tuple(target.shape)} differ")
        if target.max() >= self.num_classes:  # expect: GS201
            raise ValueError(f"target has values >= num_classes={self.num_classes}")

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        if preds.ndim == target.ndim + 1:
            preds = preds.argmax(dim=-1)
        if self.validate_args:
            self._check(preds, target)
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            preds, target = preds[keep], target[keep]  # expect: GS108
        self.correct += (preds == target).sum()
        self.total += target.numel()

    def compute(self) -> torch.Tensor:
        if self.total == 0:  # expect: GS201
            return torch.zeros((), device=self.correct.device)
        return self.correct.float() / self.total


class MulticlassF1Score(Metric):
    """Macro F1 from per-class stat scores, accumulated and reduced entirely on the device."""

    def __init__(self, num_classes: int, average: str = "macro"):
        super().__init__(validate_args=False)
        self.num_classes = num_classes
        self.average = average
        for name in ("tp", "fp", "fn"):
            self.add_state(name, torch.zeros(num_classes))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        if preds.ndim == target.ndim + 1:
            preds = preds.argmax(dim=-1)
        p = F.one_hot(preds, self.num_classes).float()
        t = F.one_hot(target, self.num_classes).float()
        self.tp += (p * t).sum(0)
        self.fp += (p * (1 - t)).sum(0)
        self.fn += ((1 - p) * t).sum(0)

    def compute(self) -> torch.Tensor:
        denom = 2 * self.tp + self.fp + self.fn
        f1 = torch.where(denom > 0, 2 * self.tp / denom.clamp(min=1), torch.zeros_like(denom))
        if self.average == "macro":
            return f1.mean()
        return f1


class MeanMetric(Metric):
    """Weighted running mean with torchmetrics' NaN handling."""

    def __init__(self, nan_strategy: str = "warn"):
        super().__init__(validate_args=False)
        self.nan_strategy = nan_strategy
        self.add_state("mean_value", torch.zeros(()))
        self.add_state("weight", torch.zeros(()))

    def update(self, value: torch.Tensor, weight: float | torch.Tensor = 1.0) -> None:
        if not isinstance(weight, torch.Tensor):
            weight = torch.as_tensor(weight, dtype=torch.float32, device=self.mean_value.device)  # expect: GS402
        weight = torch.broadcast_to(weight, value.shape)
        nans = torch.isnan(value)
        if nans.any():  # expect: GS201
            if self.nan_strategy == "error":
                raise RuntimeError("Encountered `nan` values in tensor")
            warnings.warn("Encountered `nan` values in tensor. Will be removed.")  # expect: GS501
            value, weight = value[~nans], weight[~nans]  # expect: GS108
        self.mean_value += (value * weight).sum()
        self.weight += weight.sum()

    def compute(self) -> torch.Tensor:
        return self.mean_value / self.weight.clamp(min=1e-12)
