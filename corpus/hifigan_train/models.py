from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, ch: int, dilations=(1, 3)):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(ch, ch, 3, dilation=d, padding=d) for d in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, 0.1))
        return x


class Generator(nn.Module):
    def __init__(self, n_mels: int, upsample=(4, 8), ch: int = 16):
        super().__init__()
        self.pre = nn.Conv1d(n_mels, ch, 7, padding=3)
        ups, blocks = [], []
        for r in upsample:
            ups.append(nn.ConvTranspose1d(ch, ch // 2, r * 2, stride=r, padding=r // 2))
            ch //= 2
            blocks.append(ResBlock(ch))
        self.ups = nn.ModuleList(ups)
        self.blocks = nn.ModuleList(blocks)
        self.post = nn.Conv1d(ch, 1, 7, padding=3)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = self.pre(mel)
        for up, block in zip(self.ups, self.blocks):
            x = block(up(F.leaky_relu(x, 0.1)))
        return torch.tanh(self.post(F.leaky_relu(x)))


class PeriodDiscriminator(nn.Module):
    def __init__(self, period: int):
        super().__init__()
        self.period = period
        self.convs = nn.ModuleList([nn.Conv2d(1, 8, (5, 1), (3, 1), (2, 0)), nn.Conv2d(8, 16, (5, 1), (3, 1), (2, 0))])
        self.out = nn.Conv2d(16, 1, (3, 1), padding=(1, 0))

    def forward(self, wav: torch.Tensor):
        b, c, t = wav.shape
        if t % self.period != 0:
            wav = F.pad(wav, (0, self.period - t % self.period), mode="reflect")
            t = wav.shape[-1]
        x = wav.view(b, c, t // self.period, self.period)
        feats = []
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.1)
            feats.append(x)
        return self.out(x).flatten(1), feats


class ScaleDiscriminator(nn.Module):
    def __init__(self, pool: int):
        super().__init__()
        self.pool = nn.AvgPool1d(pool * 2, pool, padding=pool) if pool > 1 else nn.Identity()
        self.convs = nn.ModuleList([nn.Conv1d(1, 8, 15, padding=7), nn.Conv1d(8, 16, 41, 4, groups=4, padding=20)])
        self.out = nn.Conv1d(16, 1, 3, padding=1)

    def forward(self, wav: torch.Tensor):
        x = self.pool(wav)
        feats = []
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.1)
            feats.append(x)
        return self.out(x).flatten(1), feats


class MultiDiscriminator(nn.Module):
    def __init__(self, periods, scales=(1, 2)):
        super().__init__()
        self.discs = nn.ModuleList([PeriodDiscriminator(p) for p in periods] + [ScaleDiscriminator(s) for s in scales])

    def forward(self, real: torch.Tensor, fake: torch.Tensor):
        outs = []
        for d in self.discs:
            r, fr = d(real)
            f, ff = d(fake)
            outs.append((r, f, fr, ff))
        return outs
