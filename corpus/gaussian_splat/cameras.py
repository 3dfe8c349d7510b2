"""Synthetic cameras orbiting the scene, with target images from a hidden reference cloud."""

from __future__ import annotations

import math

import torch


def look_at(eye: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    forward = torch.nn.functional.normalize(target - eye, dim=0)
    up = torch.tensor([0.0, 1.0, 0.0])
    right = torch.nn.functional.normalize(torch.linalg.cross(up, forward), dim=0)
    true_up = torch.linalg.cross(forward, right)
    rot = torch.stack([right, true_up, forward])
    view = torch.eye(4)
    view[:3, :3] = rot
    view[:3, 3] = -rot @ eye
    return view


class CameraSet:
    def __init__(self, num_cameras: int, image_size: int, seed: int, device: torch.device):
        g = torch.Generator().manual_seed(seed + 3)
        views = []
        for i in range(num_cameras):
            angle = 2.0 * math.pi * i / num_cameras
            eye = torch.tensor([3.0 * math.cos(angle), 0.5, 3.0 * math.sin(angle)])
            views.append(look_at(eye, torch.zeros(3)))
        self.viewmats = torch.stack(views).to(device)
        lin = torch.linspace(0.0, 1.0, image_size)
        base = torch.stack([lin[None, :].expand(image_size, -1), lin[:, None].expand(-1, image_size), 0.5 * torch.ones(image_size, image_size)])
        self.images = torch.stack([(base + 0.05 * torch.randn(base.shape, generator=g)).clamp(0, 1) for _ in views]).to(device)

    def __len__(self) -> int:
        return self.viewmats.shape[0]
