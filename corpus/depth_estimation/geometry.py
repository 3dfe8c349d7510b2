"""Depth scaling and a simplified view-synthesis warp."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def disp_to_depth(disp: torch.Tensor, min_depth: float, max_depth: float) -> torch.Tensor:
    min_disp = 1.0 / max_depth
    max_disp = 1.0 / min_depth
    scaled = min_disp + (max_disp - min_disp) * disp
    return 1.0 / scaled


def base_grid(b: int, h: int, w: int, device: torch.device) -> torch.Tensor:
    ys = torch.linspace(-1.0, 1.0, h, device=device)
    xs = torch.linspace(-1.0, 1.0, w, device=device)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([gx, gy], dim=-1).unsqueeze(0).expand(b, h, w, 2)


def warp(source: torch.Tensor, depth: torch.Tensor, pose: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    shift = pose[:, None, None, :2] / depth.permute(0, 2, 3, 1).clamp(min=1e-3)
    if (shift.abs() > 1.0).any():  # expect: GS201
        shift = shift.clamp(-1.0, 1.0)
    return F.grid_sample(source, grid + shift, padding_mode="border", align_corners=False)
