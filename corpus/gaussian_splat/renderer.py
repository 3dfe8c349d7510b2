"""A small differentiable splat renderer: project, weight by 2D Gaussians, alpha-composite."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from config import SplatConfig
from gaussians import GaussianModel
from sh_utils import eval_sh


def pixel_grid(size: int, device: torch.device) -> torch.Tensor:
    lin = torch.linspace(-1.0, 1.0, size, device=device)
    ys, xs = torch.meshgrid(lin, lin, indexing="ij")
    return torch.stack([xs, ys], dim=-1).reshape(-1, 2)


def render(viewmat: torch.Tensor, pc: GaussianModel, bg: torch.Tensor, cfg: SplatConfig) -> dict[str, torch.Tensor]:
    means = pc.get_xyz
    rot, trans = viewmat[:3, :3], viewmat[:3, 3]
    cam_center = -rot.T @ trans
    pts = means @ rot.T + trans
    depth = pts[:, 2:3].clamp_min(0.2)
    means2d = pts[:, :2] / depth
    means2d.retain_grad()
    if not torch.isfinite(means2d).all():  # expect: GS201
        raise FloatingPointError("projection produced non-finite coordinates")
    dirs = F.normalize(means - cam_center, dim=-1)
    colors = eval_sh(pc.active_sh_degree, pc.get_features, dirs).clamp_min(0.0)
    anisotropy = 1.0 + pc.get_rotation[:, 1:].abs().mean(-1, keepdim=True)
    sigma2d = (pc.get_scaling.mean(-1, keepdim=True) * anisotropy / depth).clamp_min(0.02)
    radii = (3.0 * sigma2d.squeeze(-1) * cfg.image_size).detach() * pc.alive

    grid = pixel_grid(cfg.image_size, means.device)
    d2 = ((grid[None, :, :] - means2d[:, None, :]) ** 2).sum(-1)
    alpha = (pc.get_opacity * torch.exp(-0.5 * d2 / sigma2d.pow(2))).clamp(max=0.99)
    order = torch.argsort(depth.squeeze(-1))
    alpha, colors = alpha[order], colors[order]
    transmittance = torch.cumprod(torch.cat([torch.ones_like(alpha[:1]), 1.0 - alpha[:-1]], 0), 0)
    weights = alpha * transmittance
    image = weights.T @ colors + (1.0 - weights.sum(0))[:, None] * bg
    image = image.T.reshape(3, cfg.image_size, cfg.image_size)
    return {"render": image, "viewspace_points": means2d, "radii": radii}
