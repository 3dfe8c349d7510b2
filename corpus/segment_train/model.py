"""A small fully-convolutional segmentation network with an auxiliary head."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SegNet(nn.Module):
    def __init__(self, n_classes: int, width: int):
        super().__init__()
        self.stem = conv_bn(3, width)
        self.down1 = conv_bn(width, 2 * width, 2)
        self.down2 = conv_bn(2 * width, 2 * width, 2)
        self.head = nn.Conv2d(2 * width, n_classes, 1)
        self.aux = nn.Conv2d(2 * width, n_classes, 1)

    def forward(self, image: torch.Tensor):
        assert image.shape[1] == 3, "expects RGB input"
        size = image.shape[-2:]
        f1 = self.down1(self.stem(image))
        f2 = self.down2(f1)
        out = F.interpolate(self.head(f2), size=size, mode="bilinear", align_corners=False)
        if not self.training:
            return out
        aux = F.interpolate(self.aux(f1), size=size, mode="bilinear", align_corners=False)
        return out, aux
