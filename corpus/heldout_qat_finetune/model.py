"""A small conv net with fake-quantized weights and activations."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from quant import FakeQuantize


class QConvBNReLU(nn.Module):
    def __init__(self, cin: int, cout: int, cfg):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.w_fq = FakeQuantize(cout, cfg.weight_bits, cfg.freeze_observers_after, ch_axis=0)
        self.a_fq = FakeQuantize(cout, cfg.act_bits, cfg.freeze_observers_after, ch_axis=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.w_fq(self.conv.weight)
        y = F.conv2d(x, w, padding=1)
        return self.a_fq(F.relu(self.bn(y)))


class QuantNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.stem = QConvBNReLU(cfg.in_channels, cfg.width, cfg)
        self.body = QConvBNReLU(cfg.width, cfg.width * 2, cfg)
        self.head = nn.Linear(cfg.width * 2, cfg.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            x = x.unsqueeze(0)
        h = self.body(self.stem(x))
        return self.head(h.mean(dim=(2, 3)))

    def fake_quants(self) -> list[FakeQuantize]:
        return [m for m in self.modules() if isinstance(m, FakeQuantize)]


def freeze_bn_stats(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eval()
