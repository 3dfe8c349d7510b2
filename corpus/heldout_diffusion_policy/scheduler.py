"""A DDIM scheduler (deterministic, eta = 0) over a linear beta schedule."""

from __future__ import annotations

import torch

from config import ScheduleConfig


class DDIMScheduler:
    def __init__(self, cfg: ScheduleConfig, device: torch.device):
        self.cfg = cfg
        self.num_train_timesteps = cfg.num_train_timesteps
        betas = torch.linspace(cfg.beta_start, cfg.beta_end, cfg.num_train_timesteps, device=device)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.final_alpha_cumprod = torch.ones((), device=device)
        self.timesteps = torch.arange(cfg.num_train_timesteps - 1, -1, -1, device=device)
        self.prev_timesteps = self.timesteps - 1
        self.clip_sample = cfg.clip_sample

    def set_timesteps(self, num_inference_steps: int) -> None:
        ratio = self.num_train_timesteps // num_inference_steps
        steps = torch.arange(num_inference_steps, device=self.alphas_cumprod.device) * ratio
        self.timesteps = steps.flip(0)  # expect: GS401
        self.prev_timesteps = self.timesteps - ratio  # expect: GS401

    def add_noise(self, x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        abar = self.alphas_cumprod[t].view(-1, *([1] * (x0.dim() - 1)))
        return abar.sqrt() * x0 + (1.0 - abar).sqrt() * noise

    def step(self, eps: torch.Tensor, step_index: int, sample: torch.Tensor) -> torch.Tensor:
        t, prev_t = self.timesteps[step_index], self.prev_timesteps[step_index]  # expect: GS301
        abar = self.alphas_cumprod[t]
        abar_prev = torch.where(prev_t >= 0, self.alphas_cumprod[prev_t.clamp(min=0)], self.final_alpha_cumprod)
        pred_x0 = (sample - (1.0 - abar).sqrt() * eps) / abar.sqrt()
        if self.clip_sample:
            pred_x0 = pred_x0.clamp(-self.clip_sample, self.clip_sample)
        return abar_prev.sqrt() * pred_x0 + (1.0 - abar_prev).sqrt() * eps
