"""A small ResNet-ish image classifier with optional activation checkpointing, and timm's
soft-target / label-smoothing cross entropy."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class BasicBlock(nn.Module):
    def __init__(self, ch: int):
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(ch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(h)))


class SmallResNet(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 16, depth: int = 2, grad_ckpt: bool = True):
        super().__init__()
        self.grad_ckpt = grad_ckpt
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.ModuleList(BasicBlock(width) for _ in range(depth))
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            if self.grad_ckpt and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.fc(x.mean(dim=(2, 3)))


class SoftTargetCrossEntropy(nn.Module):
    """Soft targets from mixup; falls back to label smoothing for hard targets."""

    def __init__(self, smoothing: float = 0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logprobs = F.log_softmax(logits.float(), dim=-1)
        if target.dim() == 1:
            nll = -logprobs.gather(dim=-1, index=target.unsqueeze(1)).squeeze(1)
            loss = (1.0 - self.smoothing) * nll - self.smoothing * logprobs.mean(dim=-1)
        else:
            loss = torch.sum(-target * logprobs, dim=-1)
        return loss.mean()
