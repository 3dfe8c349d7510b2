"""Per-Gaussian parameters stored in a fixed-capacity pool with an `alive` mask."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from config import SplatConfig
from schedules import inverse_sigmoid


class GaussianModel(nn.Module):
    def __init__(self, cfg: SplatConfig, device: torch.device):
        super().__init__()
        cap, n = cfg.capacity, cfg.num_gaussians
        g = torch.Generator().manual_seed(cfg.seed)
        n_sh = (cfg.max_sh_degree + 1) ** 2
        self.device = device
        self._xyz = nn.Parameter(torch.randn(cap, 3, generator=g) * 0.6)
        self._scaling = nn.Parameter(torch.full((cap, 3), -2.0) + 0.1 * torch.randn(cap, 3, generator=g))
        self._rotation = nn.Parameter(torch.cat([torch.ones(cap, 1), 0.1 * torch.randn(cap, 3, generator=g)], 1))
        self._opacity = nn.Parameter(inverse_sigmoid(torch.full((cap, 1), 0.3)))
        self._features = nn.Parameter(0.2 * torch.randn(cap, n_sh, 3, generator=g))
        alive = torch.zeros(cap, dtype=torch.bool)
        alive[:n] = True
        self.register_buffer("alive", alive)
        self.register_buffer("xyz_gradient_accum", torch.zeros(cap, 1))
        self.register_buffer("denom", torch.zeros(cap, 1))
        self.register_buffer("max_radii2D", torch.zeros(cap))
        self.max_sh_degree = cfg.max_sh_degree
        self.active_sh_degree = 0
        self.split_gen = torch.Generator(device=self.device)
        self.split_gen.manual_seed(cfg.seed + 17)

    @property
    def get_xyz(self) -> torch.Tensor:
        return self._xyz

    @property
    def get_scaling(self) -> torch.Tensor:
        return torch.exp(self._scaling)

    @property
    def get_rotation(self) -> torch.Tensor:
        return F.normalize(self._rotation, dim=-1)

    @property
    def get_opacity(self) -> torch.Tensor:
        return torch.sigmoid(self._opacity) * self.alive[:, None]

    @property
    def get_features(self) -> torch.Tensor:
        return self._features

    def param_groups(self, cfg: SplatConfig) -> list[dict]:
        return [
            {"params": [self._xyz], "lr": cfg.position_lr_init, "name": "xyz"},
            {"params": [self._features], "lr": cfg.feature_lr, "name": "f_sh"},
            {"params": [self._opacity], "lr": cfg.opacity_lr, "name": "opacity"},
            {"params": [self._scaling], "lr": cfg.scaling_lr, "name": "scaling"},
            {"params": [self._rotation], "lr": cfg.rotation_lr, "name": "rotation"},
        ]

    def oneup_sh_degree(self) -> None:
        if self.active_sh_degree < self.max_sh_degree:
            self.active_sh_degree += 1

    def add_densification_stats(self, viewspace_grad: torch.Tensor, radii: torch.Tensor) -> torch.Tensor:
        visible = radii > 0
        grad_norm = torch.norm(viewspace_grad, dim=-1, keepdim=True)
        self.xyz_gradient_accum.add_(grad_norm * visible[:, None])
        self.denom.add_(visible[:, None].float())
        self.max_radii2D.copy_(torch.where(visible, torch.maximum(self.max_radii2D, radii), self.max_radii2D))
        return radii[visible].mean()  # expect: GS108

    def densify_and_prune(self, grad_threshold: float, min_opacity: float) -> int:
        grads = self.xyz_gradient_accum / self.denom.clamp_min(1.0)
        if grads.max() <= grad_threshold:  # expect: GS201
            return self.alive.numel()
        candidates = torch.nonzero((grads.squeeze(-1) >= grad_threshold) & self.alive).squeeze(-1)  # expect: GS107
        free = (~self.alive).nonzero(as_tuple=True)[0]  # expect: GS107
        n = min(candidates.numel(), free.numel())
        if n > 0:  # expect: GS201
            src, dst = candidates[:n], free[:n]
            for p in (self._xyz, self._scaling, self._rotation, self._opacity, self._features):
                p.data[dst] = p.data[src]
            jitter = torch.randn(n, 3, generator=self.split_gen, device=self._xyz.device)  # expect: GS601, GS408
            self._xyz.data[dst] += jitter * self.get_scaling[src]
            self.alive[dst] = True
        prune = (self.get_opacity.squeeze(-1) < min_opacity) & self.alive
        self.alive.masked_fill_(prune, False)
        self.xyz_gradient_accum.zero_()
        self.denom.zero_()
        return int(self.alive.sum())  # expect: GS105

    def reset_opacity(self) -> None:
        target = inverse_sigmoid(torch.full_like(self._opacity, 0.01))
        self._opacity.data.copy_(torch.minimum(self._opacity.data, target))
