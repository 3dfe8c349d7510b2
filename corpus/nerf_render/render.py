from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F


def volume_render(raw: torch.Tensor, z: torch.Tensor, white_bkgd: bool) -> dict[str, torch.Tensor]:
    sigma = F.softplus(raw[..., 3])
    rgb = torch.sigmoid(raw[..., :3])
    deltas = z[..., 1:] - z[..., :-1]
    deltas = torch.cat([deltas, torch.full_like(deltas[..., :1], 1e10)], dim=-1)
    alpha = 1.0 - torch.exp(-sigma * deltas)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1.0 - alpha + 1e-10], dim=-1), dim=-1)[..., :-1]
    weights = alpha * trans
    assert (weights >= -1e-6).all(), "negative ray weights"  # expect: GS201
    rgb_map = (weights[..., None] * rgb).sum(-2)
    depth = (weights * z).sum(-1)
    acc = weights.sum(-1)
    if acc.mean() < 0.05:  # expect: GS201
        warnings.warn("most rays hit empty space; check near/far bounds")  # expect: GS501
    if white_bkgd:
        rgb_map = rgb_map + (1.0 - acc[..., None])
    depth_valid = depth[acc > 1e-4]  # expect: GS108
    return {"rgb": rgb_map, "weights": weights, "depth_mean": depth_valid.mean(), "acc": acc}
