"""L1 and SSIM losses, as in the 3DGS reference implementation."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def l1_loss(network_output: torch.Tensor, gt: torch.Tensor) -> torch.Tensor:
    return torch.abs(network_output - gt).mean()


def gaussian(window_size: int, sigma: float, device: torch.device) -> torch.Tensor:
    center = window_size // 2
    gauss = torch.tensor(  # expect: GS402
        [math.exp(-((x - center) ** 2) / float(2 * sigma**2)) for x in range(window_size)], device=device
    )
    return gauss / gauss.sum()


def create_window(window_size: int, channel: int, device: torch.device) -> torch.Tensor:
    _1d = gaussian(window_size, 1.5, device).unsqueeze(1)
    _2d = (_1d @ _1d.T).float().unsqueeze(0).unsqueeze(0)
    return _2d.expand(channel, 1, window_size, window_size).contiguous()


def ssim(img1: torch.Tensor, img2: torch.Tensor, window_size: int = 5) -> torch.Tensor:
    channel = img1.size(-3)
    window = create_window(window_size, channel, img1.device)
    img1, img2 = img1.unsqueeze(0), img2.unsqueeze(0)
    pad = window_size // 2
    mu1 = F.conv2d(img1, window, padding=pad, groups=channel)
    mu2 = F.conv2d(img2, window, padding=pad, groups=channel)
    mu1_sq, mu2_sq, mu1_mu2 = mu1.pow(2), mu2.pow(2), mu1 * mu2
    sigma1_sq = F.conv2d(img1 * img1, window, padding=pad, groups=channel) - mu1_sq
    sigma2_sq = F.conv2d(img2 * img2, window, padding=pad, groups=channel) - mu2_sq
    sigma12 = F.conv2d(img1 * img2, window, padding=pad, groups=channel) - mu1_mu2
    c1, c2 = 0.01**2, 0.03**2
    ssim_map = ((2 * mu1_mu2 + c1) * (2 * sigma12 + c2)) / ((mu1_sq + mu2_sq + c1) * (sigma1_sq + sigma2_sq + c2))
    return ssim_map.mean()
