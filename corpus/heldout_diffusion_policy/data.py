"""Synthetic demonstrations: a point reaching a goal, observed with a short history."""

from __future__ import annotations

import torch

from config import PolicyConfig


def make_batch(cfg: PolicyConfig, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, h = cfg.batch_size, cfg.horizon
    obs = torch.randn(b, cfg.n_obs_steps, cfg.obs_dim, generator=g)
    goal = obs[:, -1, : cfg.action_dim]
    ramp = torch.linspace(0.1, 1.0, h)[None, :, None]
    actions = (goal[:, None, :] * ramp).tanh() * 0.9
    valid = torch.randint(h // 2, h + 1, (b,), generator=g)
    is_pad = torch.arange(h)[None, :] >= valid[:, None]
    return obs, actions, is_pad
