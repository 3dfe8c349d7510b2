"""Photometric, smoothness losses and schedules."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def ssim(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    c1, c2 = 0.01**2, 0.03**2
    mu_x = F.avg_pool2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), 3, 1)
    mu_y = F.avg_pool2d(F.pad(y, (1, 1, 1, 1), mode="reflect"), 3, 1)
    sx = F.avg_pool2d(F.pad(x * x, (1, 1, 1, 1), mode="reflect"), 3, 1) - mu_x**2
    sy = F.avg_pool2d(F.pad(y * y, (1, 1, 1, 1), mode="reflect"), 3, 1) - mu_y**2
    sxy = F.avg_pool2d(F.pad(x * y, (1, 1, 1, 1), mode="reflect"), 3, 1) - mu_x * mu_y
    num = (2 * mu_x * mu_y + c1) * (2 * sxy + c2)
    den = (mu_x**2 + mu_y**2 + c1) * (sx + sy + c2)
    return torch.clamp((1 - num / den) / 2, 0, 1)


def photometric(pred: torch.Tensor, target: torch.Tensor, alpha: float) -> torch.Tensor:
    l1 = (pred - target).abs().mean(1, keepdim=True)
    return alpha * ssim(pred, target).mean(1, keepdim=True) + (1 - alpha) * l1


def edge_smoothness(disp: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    mean_disp = disp.mean(dim=(2, 3), keepdim=True)
    norm = disp / (mean_disp + 1e-7)
    dx = (norm[:, :, :, :-1] - norm[:, :, :, 1:]).abs()
    dy = (norm[:, :, :-1, :] - norm[:, :, 1:, :]).abs()
    ix = (image[:, :, :, :-1] - image[:, :, :, 1:]).abs().mean(1, keepdim=True)
    iy = (image[:, :, :-1, :] - image[:, :, 1:, :]).abs().mean(1, keepdim=True)
    return (dx * torch.exp(-ix)).mean() + (dy * torch.exp(-iy)).mean()


def smooth_weight_at(step: int, base: float, warmup: int) -> float:
    return base * min(1.0, (step + 1) / warmup)
