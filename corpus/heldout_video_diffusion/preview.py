"""Few-step DDIM previews from the v-prediction model."""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)


def to_grid(clip: torch.Tensor) -> torch.Tensor:
    frames = clip[0].clamp(-1.0, 1.0).add(1.0).mul(127.5)
    return torch.cat(list(frames.unbind(0)), dim=-1).to(torch.uint8)


class PreviewSampler:
    def __init__(self, model, sqrt_ac: torch.Tensor, sqrt_1m_ac: torch.Tensor, cfg):
        self.model = model
        self.sqrt_ac = sqrt_ac
        self.sqrt_1m_ac = sqrt_1m_ac
        self.cfg = cfg
        self.bank = torch.zeros(0, cfg.frames, cfg.channels, cfg.size, cfg.size, device=sqrt_ac.device)
        self.grids: list = []

    @torch.no_grad()
    def preview(self, text_ids: torch.Tensor, step: int) -> torch.Tensor:
        cfg = self.cfg
        torch.manual_seed(cfg.seed)  # expect: GS602
        x = torch.randn(1, cfg.frames, cfg.channels, cfg.size, cfg.size, device=text_ids.device)
        ts = torch.linspace(cfg.timesteps - 1, 0, cfg.preview_steps, device=x.device).long()
        for i in range(cfg.preview_steps):
            t = ts[i : i + 1]
            v = self.model(x, t, text_ids)
            a = self.sqrt_ac[t].view(1, 1, 1, 1, 1)
            s = self.sqrt_1m_ac[t].view(1, 1, 1, 1, 1)
            x0 = a * x - s * v
            eps = s * x + a * v
            if i + 1 < cfg.preview_steps:
                nt = ts[i + 1 : i + 2]
                x = self.sqrt_ac[nt] * x0 + self.sqrt_1m_ac[nt] * eps
            else:
                x = x0
        if (x.abs() > 4.0).any():  # expect: GS201
            x = x / x.abs().amax().clamp(min=1.0)
        self.bank = torch.cat([self.bank, x.clamp(-1.0, 1.0)], dim=0)  # expect: GS404
        host = to_grid(x).cpu()  # expect: GS103
        self.grids.append(host)  # expect: GS503
        logger.info("preview at update %d: %d frames", step, cfg.frames)  # expect: GS501
        return x
