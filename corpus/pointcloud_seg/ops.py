"""Sampling and grouping operators of PointNet++ (pure PyTorch)."""

from __future__ import annotations

import torch


def square_distance(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    return (src[:, :, None] - dst[:, None]).square().sum(-1)


def index_points(points: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    b = points.shape[0]
    batch = torch.arange(b, device=points.device).view(b, *([1] * (idx.dim() - 1)))
    return points[batch, idx]


def farthest_point_sample(xyz: torch.Tensor, npoint: int) -> torch.Tensor:
    b, n, _ = xyz.shape
    centroids = torch.zeros(b, npoint, dtype=torch.long, device=xyz.device)
    distance = torch.full((b, n), 1e10, device=xyz.device)
    farthest = torch.zeros(b, dtype=torch.long, device=xyz.device)
    batch = torch.arange(b, device=xyz.device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch, farthest].unsqueeze(1)
        distance = torch.minimum(distance, (xyz - centroid).square().sum(-1))
        farthest = distance.argmax(-1)
    return centroids


def ball_query(radius: float, nsample: int, xyz: torch.Tensor, new_xyz: torch.Tensor) -> torch.Tensor:
    b, n, _ = xyz.shape
    s = new_xyz.shape[1]
    sqrdists = square_distance(new_xyz, xyz)
    group_idx = torch.arange(n, device=xyz.device).view(1, 1, n).repeat(b, s, 1)
    group_idx[sqrdists > radius**2] = n
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, :1].expand(-1, -1, nsample)
    mask = group_idx == n
    group_idx[mask] = group_first[mask]  # expect: GS108
    return group_idx
