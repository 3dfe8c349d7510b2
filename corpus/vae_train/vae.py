"""A small fully-connected VAE on flattened images."""

from __future__ import annotations

import torch
import torch.nn as nn

from config import VAEConfig


class Encoder(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        d_in = cfg.channels * cfg.image_size * cfg.image_size
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(d_in, cfg.hidden), nn.SiLU(), nn.Linear(cfg.hidden, cfg.hidden), nn.SiLU())
        self.mu = nn.Linear(cfg.hidden, cfg.latent_dim)
        self.logvar = nn.Linear(cfg.hidden, cfg.latent_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(x)
        return self.mu(h), self.logvar(h).clamp(-8.0, 8.0)


class Decoder(nn.Module):
    def __init__(self, cfg: VAEConfig):
        super().__init__()
        self.shape = (cfg.channels, cfg.image_size, cfg.image_size)
        d_out = cfg.channels * cfg.image_size * cfg.image_size
        self.net = nn.Sequential(nn.Linear(cfg.latent_dim, cfg.hidden), nn.SiLU(), nn.Linear(cfg.hidden, d_out))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).view(z.shape[0], *self.shape)


class VAE(nn.Module):
    def __init__(self, cfg: VAEConfig, device: torch.device):
        super().__init__()
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.noise_gen = torch.Generator(device=device)
        self.noise_gen.manual_seed(1234)

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        std = torch.exp(0.5 * logvar)
        eps = torch.randn(mu.shape, generator=self.noise_gen, device=mu.device)  # expect: GS601
        return mu + eps * std

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encoder(x)
        z = self.reparameterize(mu, logvar) if self.training else mu
        return self.decoder(z), mu, logvar
