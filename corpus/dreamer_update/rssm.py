"""Recurrent state-space model: deterministic GRU path plus a Gaussian stochastic state."""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import WorldModelConfig


class State(NamedTuple):
    deter: torch.Tensor
    stoch: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor

    @property
    def feat(self) -> torch.Tensor:
        return torch.cat([self.deter, self.stoch], -1)


def stack_states(states: list[State], dim: int = 1) -> State:
    return State(*(torch.stack(parts, dim) for parts in zip(*states)))


class RSSM(nn.Module):
    def __init__(self, cfg: WorldModelConfig):
        super().__init__()
        self.cfg = cfg
        self.cell = nn.GRUCell(cfg.stoch_dim + cfg.act_dim, cfg.deter_dim)
        self.prior_net = nn.Sequential(
            nn.Linear(cfg.deter_dim, cfg.hidden), nn.ELU(), nn.Linear(cfg.hidden, 2 * cfg.stoch_dim)
        )
        self.post_net = nn.Sequential(
            nn.Linear(cfg.deter_dim + cfg.embed_dim, cfg.hidden),
            nn.ELU(),
            nn.Linear(cfg.hidden, 2 * cfg.stoch_dim),
        )
        self.register_buffer("init_deter", torch.zeros(1, cfg.deter_dim))

    @property
    def feat_dim(self) -> int:
        return self.cfg.deter_dim + self.cfg.stoch_dim

    def initial(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        deter = self.init_deter.expand(batch, -1).clone()
        stoch = deter.new_zeros(batch, self.cfg.stoch_dim)
        return deter, stoch

    def _gaussian(self, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, raw_std = out.chunk(2, -1)
        std = F.softplus(raw_std) + self.cfg.min_std
        std = std if (std > 0).all() else std.clamp_min(self.cfg.min_std)  # expect: GS201
        return mean, std

    def img_step(self, deter, stoch, action, noise) -> State:
        deter = self.cell(torch.cat([stoch, action], -1), deter)
        mean, std = self._gaussian(self.prior_net(deter))
        return State(deter, mean + std * noise, mean, std)

    def observe(self, embed: torch.Tensor, actions: torch.Tensor, noise: torch.Tensor):
        if embed.dim() != 3:
            raise ValueError(f"expected (B, T, E) embeddings, got {tuple(embed.shape)}")
        assert torch.isfinite(embed).all(), "non-finite embedding"  # expect: GS201
        batch, steps, _ = embed.shape
        deter, stoch = self.initial(batch)
        posts, priors = [], []
        for t in range(steps):
            prior = self.img_step(deter, stoch, actions[:, t], torch.zeros_like(noise[:, t]))
            mean, std = self._gaussian(self.post_net(torch.cat([prior.deter, embed[:, t]], -1)))
            stoch = mean + std * noise[:, t]
            deter = prior.deter
            posts.append(State(deter, stoch, mean, std))
            priors.append(prior)
        return stack_states(posts), stack_states(priors)
