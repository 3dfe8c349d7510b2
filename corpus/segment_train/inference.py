"""Sliding-window inference with horizontal-flip test-time augmentation."""

from __future__ import annotations

import torch
import torch.nn as nn


def window_starts(size: int, window: int, stride: int) -> list[int]:
    starts = list(range(0, max(size - window, 0) + 1, stride))
    if starts[-1] + window < size:
        starts.append(size - window)
    return starts


def sliding_window(model: nn.Module, image: torch.Tensor, n_classes: int, window: int, stride: int) -> torch.Tensor:
    b, _, h, w = image.shape
    logits = image.new_zeros(b, n_classes, h, w)
    hits = image.new_zeros(1, 1, h, w)
    for top in window_starts(h, window, stride):
        for left in window_starts(w, window, stride):
            crop = image[:, :, top:top + window, left:left + window]
            logits[:, :, top:top + window, left:left + window] += model(crop)
            hits[:, :, top:top + window, left:left + window] += 1
    return logits / hits


def flip_tta(model: nn.Module, image: torch.Tensor, n_classes: int, window: int, stride: int, flip: bool) -> torch.Tensor:
    probs = sliding_window(model, image, n_classes, window, stride).softmax(1)
    if flip:
        probs = probs + sliding_window(model, image.flip(-1), n_classes, window, stride).softmax(1).flip(-1)
        probs = probs / 2
    return probs
