"""A two-level PointNet++ segmentation network (single-scale grouping)."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from ops import ball_query, farthest_point_sample, index_points, square_distance


def shared_mlp(channels: list[int], dim: int = 2) -> nn.Sequential:
    conv, bn = (nn.Conv2d, nn.BatchNorm2d) if dim == 2 else (nn.Conv1d, nn.BatchNorm1d)
    layers: list[nn.Module] = []
    for c_in, c_out in zip(channels[:-1], channels[1:]):
        layers += [conv(c_in, c_out, 1), bn(c_out), nn.ReLU()]
    return nn.Sequential(*layers)


class SetAbstraction(nn.Module):
    def __init__(self, npoint: int, radius: float, nsample: int, in_ch: int, out_ch: int, grad_checkpoint: bool):
        super().__init__()
        self.npoint = npoint
        self.radius = radius
        self.nsample = nsample
        self.mlp = shared_mlp([in_ch + 3, out_ch, out_ch])
        self.grad_checkpoint = grad_checkpoint

    def forward(self, xyz: torch.Tensor, feats: torch.Tensor | None):
        fps_idx = farthest_point_sample(xyz, self.npoint)
        new_xyz = index_points(xyz, fps_idx)
        idx = ball_query(self.radius, self.nsample, xyz, new_xyz)
        grouped = index_points(xyz, idx) - new_xyz[:, :, None]
        if feats is not None:
            grouped = torch.cat([grouped, index_points(feats, idx)], dim=-1)
        assert not torch.isnan(grouped).any(), "NaN in grouped features"  # expect: GS201
        grouped = grouped.permute(0, 3, 2, 1)
        if self.grad_checkpoint:
            out = checkpoint(self.mlp, grouped, use_reentrant=False)  # expect: GS603
        else:
            out = self.mlp(grouped)
        return new_xyz, out.max(dim=2)[0].transpose(1, 2)


class FeaturePropagation(nn.Module):
    def __init__(self, in_ch: int, out_ch: int):
        super().__init__()
        self.mlp = shared_mlp([in_ch, out_ch, out_ch], dim=1)

    def forward(self, xyz1, xyz2, feats1, feats2):
        n = xyz1.shape[1]
        if xyz2.shape[1] == 1:
            interpolated = feats2.repeat(1, n, 1)
        else:
            dists, idx = square_distance(xyz1, xyz2).topk(3, dim=-1, largest=False)
            weight = 1.0 / (dists + 1e-8)
            weight = weight / weight.sum(-1, keepdim=True)
            interpolated = (index_points(feats2, idx) * weight[..., None]).sum(2)
        if feats1 is not None:
            interpolated = torch.cat([feats1, interpolated], dim=-1)
        return self.mlp(interpolated.transpose(1, 2)).transpose(1, 2)


class PointNet2Seg(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        w = cfg.width
        self.sa1 = SetAbstraction(cfg.sa1_npoint, cfg.sa1_radius, cfg.sa1_nsample, 0, w, cfg.grad_checkpoint)
        self.sa2 = SetAbstraction(cfg.sa2_npoint, cfg.sa2_radius, cfg.sa2_nsample, w, 2 * w, cfg.grad_checkpoint)
        self.fp2 = FeaturePropagation(3 * w, w)
        self.fp1 = FeaturePropagation(w, w)
        self.head = nn.Linear(w, cfg.num_classes)

    def forward(self, xyz: torch.Tensor) -> torch.Tensor:
        l1_xyz, l1_feats = self.sa1(xyz, None)
        l2_xyz, l2_feats = self.sa2(l1_xyz, l1_feats)
        l1_feats = self.fp2(l1_xyz, l2_xyz, l1_feats, l2_feats)
        l0_feats = self.fp1(xyz, l1_xyz, None, l1_feats)
        return self.head(l0_feats)
