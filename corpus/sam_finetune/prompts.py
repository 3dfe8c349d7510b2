"""Prompt sampling from ground-truth masks and error regions."""

from __future__ import annotations

import random

import torch


def sample_points(masks: torch.Tensor, num_points: int, gen: torch.Generator | None = None):
    b, h, w = masks.shape
    flat = masks.flatten(1).float() + 1e-6
    idx = torch.multinomial(flat, num_points, replacement=True, generator=gen)
    ys = torch.div(idx, w, rounding_mode="floor")
    xs = idx % w
    points = torch.stack([xs, ys], dim=-1).float()
    labels = torch.ones(b, num_points, dtype=torch.long, device=masks.device)
    return points, labels


def boxes_from_masks(masks: torch.Tensor) -> torch.Tensor:
    boxes = []
    for m in masks:
        ys, xs = torch.nonzero(m, as_tuple=True)  # expect: GS107
        if ys.numel() == 0:  # expect: GS201
            boxes.append(m.new_zeros(4))
            continue
        boxes.append(torch.stack([xs.min(), ys.min(), xs.max(), ys.max()]).float())
    return torch.stack(boxes)


def jitter_boxes(boxes: torch.Tensor, scale: float) -> torch.Tensor:
    noise = random.uniform(-scale, scale)  # expect: GS502
    return boxes + noise  # expect: GS301 (a host draw's number, frozen where it enters device work)


def error_region_point(pred: torch.Tensor, target: torch.Tensor):
    false_neg = (target > 0.5) & (pred <= 0.0)
    false_pos = (target <= 0.5) & (pred > 0.0)
    err = (false_neg | false_pos).flatten(1)
    if not err.any():  # expect: GS201
        return None
    w = pred.shape[-1]
    idx = err.float().argmax(dim=1)
    xy = torch.stack([idx % w, torch.div(idx, w, rounding_mode="floor")], dim=-1).float()
    label = false_neg.flatten(1).gather(1, idx[:, None]).long()
    return xy[:, None, :], label
