"""Convolutional encoder/decoder and a recurrent state-space model with categorical latents."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import WorldModelConfig


class Encoder(nn.Module):
    def __init__(self, cfg: WorldModelConfig):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(cfg.channels, 8, 3, stride=2, padding=1), nn.ELU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ELU(),
        )
        self.out = nn.Linear(16 * (cfg.size // 4) ** 2, cfg.embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.conv(x).flatten(1))


class Decoder(nn.Module):
    def __init__(self, cfg: WorldModelConfig, feat: int):
        super().__init__()
        self.size = cfg.size
        self.fc = nn.Linear(feat, 16 * (cfg.size // 4) ** 2)
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.ELU(),
            nn.ConvTranspose2d(8, cfg.channels, 4, stride=2, padding=1),
        )

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        x = self.fc(feat).view(-1, 16, self.size // 4, self.size // 4)
        return self.deconv(x)


class RSSM(nn.Module):
    def __init__(self, cfg: WorldModelConfig):
        super().__init__()
        self.cfg = cfg
        stoch = cfg.n_cat * cfg.n_cls
        self.inp = nn.Linear(stoch + cfg.action_dim, cfg.deter)
        self.cell = nn.GRUCell(cfg.deter, cfg.deter)
        self.prior_head = nn.Linear(cfg.deter, stoch)
        self.post_head = nn.Linear(cfg.deter + cfg.embed, stoch)

    def sample(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.view(-1, self.cfg.n_cat, self.cfg.n_cls)
        probs = logits.softmax(-1)
        idx = torch.multinomial(probs.flatten(0, 1), 1).view(probs.shape[:-1])
        onehot = F.one_hot(idx, num_classes=self.cfg.n_cls).to(probs.dtype)
        return (onehot + probs - probs.detach()).flatten(1)

    def step(self, h: torch.Tensor, z: torch.Tensor, action: torch.Tensor, embed: torch.Tensor | None):
        h = self.cell(F.elu(self.inp(torch.cat([z, action], -1))), h)
        prior_logits = self.prior_head(h)
        if embed is None:
            return h, prior_logits, prior_logits, self.sample(prior_logits)
        post_logits = self.post_head(torch.cat([h, embed], -1))
        return h, prior_logits, post_logits, self.sample(post_logits)
