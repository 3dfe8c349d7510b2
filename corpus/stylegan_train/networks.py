"""Mapping, synthesis and discriminator networks (a very small StyleGAN2)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import StyleGANConfig


class MappingNetwork(nn.Module):
    def __init__(self, cfg: StyleGANConfig):
        super().__init__()
        layers: list[nn.Module] = []
        for i in range(cfg.map_layers):
            layers += [nn.Linear(cfg.z_dim if i == 0 else cfg.w_dim, cfg.w_dim), nn.LeakyReLU(0.2)]
        self.net = nn.Sequential(*layers)
        self.num_ws = cfg.num_ws
        self.register_buffer("w_avg", torch.zeros(cfg.w_dim))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        x = z * (z.square().mean(1, keepdim=True) + 1e-8).rsqrt()
        w = self.net(x)
        if self.training:
            self.w_avg.copy_(w.detach().mean(0).lerp(self.w_avg, 0.995))
        return w.unsqueeze(1).repeat(1, self.num_ws, 1)


class StyledConv(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, w_dim: int, kernel: int = 3, up: bool = False, noise: bool = True):
        super().__init__()
        self.affine = nn.Linear(w_dim, in_ch)
        self.weight = nn.Parameter(torch.randn(out_ch, in_ch, kernel, kernel) * 0.2)
        self.bias = nn.Parameter(torch.zeros(out_ch))
        self.noise_strength = nn.Parameter(torch.zeros(()))
        self.up = up
        self.use_noise = noise
        self.padding = kernel // 2

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        if self.up:
            x = F.interpolate(x, scale_factor=2, mode="nearest")
        styles = self.affine(w) + 1.0
        wgt = self.weight[None] * styles[:, None, :, None, None]
        demod = (wgt.square().sum([2, 3, 4]) + 1e-8).rsqrt()
        wgt = wgt * demod[:, :, None, None, None]
        x = x.reshape(1, -1, *x.shape[2:])
        out = F.conv2d(x, wgt.reshape(-1, *wgt.shape[2:]), padding=self.padding, groups=b)
        out = out.reshape(b, -1, *out.shape[2:])
        if self.use_noise:
            noise = torch.randn(b, 1, *out.shape[2:], device=out.device)
            out = out + noise * self.noise_strength
        return F.leaky_relu(out + self.bias[None, :, None, None], 0.2)


class SynthesisNetwork(nn.Module):
    def __init__(self, cfg: StyleGANConfig):
        super().__init__()
        ch = cfg.channels
        self.const = nn.Parameter(torch.randn(ch, cfg.img_res // 2, cfg.img_res // 2))
        self.conv0 = StyledConv(ch, ch, cfg.w_dim)
        self.conv1 = StyledConv(ch, ch, cfg.w_dim, up=True)
        self.conv2 = StyledConv(ch, ch, cfg.w_dim)
        self.torgb = StyledConv(ch, cfg.img_channels, cfg.w_dim, kernel=1, noise=False)

    def forward(self, ws: torch.Tensor) -> torch.Tensor:
        x = self.const[None].expand(ws.shape[0], -1, -1, -1)
        x = self.conv0(x, ws[:, 0])
        x = self.conv1(x, ws[:, 1])
        x = self.conv2(x, ws[:, 2])
        return self.torgb(x, ws[:, 3])


class Generator(nn.Module):
    def __init__(self, cfg: StyleGANConfig, device: torch.device):
        super().__init__()
        self.mapping = MappingNetwork(cfg)
        self.synthesis = SynthesisNetwork(cfg)
        self.mixing_prob = cfg.style_mixing_prob
        self.device = device
        self.mix_gen = torch.Generator(device=self.device)
        self.mix_gen.manual_seed(cfg.seed + 17)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.synthesis(self.mapping(z))

    def mix_styles(self, ws: torch.Tensor, z_mix: torch.Tensor) -> torch.Tensor:
        b, num_ws, _ = ws.shape
        cutoff = torch.randint(1, num_ws, (b, 1), generator=self.mix_gen, device=ws.device)  # expect: GS601
        coin = torch.rand(b, 1, generator=self.mix_gen, device=ws.device)  # expect: GS601
        cutoff = torch.where(coin < self.mixing_prob, cutoff, torch.full_like(cutoff, num_ws))
        layer = torch.arange(num_ws, device=ws.device)[None]
        ws_mix = self.mapping(z_mix)
        return torch.where((layer < cutoff)[..., None], ws, ws_mix)


class Discriminator(nn.Module):
    def __init__(self, cfg: StyleGANConfig):
        super().__init__()
        ch = cfg.channels
        self.in_ch = cfg.img_channels
        self.fromrgb = nn.Conv2d(cfg.img_channels + 1, ch, 1)
        self.b0 = nn.Conv2d(ch, ch, 3, padding=1)
        self.b1 = nn.Conv2d(ch, ch, 3, padding=1, stride=2)
        self.out = nn.Linear(ch * (cfg.img_res // 2) ** 2 + 1, 1)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        assert img.shape[1] == self.in_ch, "unexpected channel count"
        lum_w = torch.tensor([0.299, 0.587, 0.114], device=img.device).view(1, 3, 1, 1)  # expect: GS402
        lum = (img * lum_w).sum(1, keepdim=True)
        x = F.leaky_relu(self.fromrgb(torch.cat([img, lum], 1)), 0.2)
        x = F.leaky_relu(self.b0(x), 0.2)
        x = F.leaky_relu(self.b1(x), 0.2)
        std = x.std(0).mean().expand(x.shape[0], 1)
        return self.out(torch.cat([x.flatten(1), std], 1))
