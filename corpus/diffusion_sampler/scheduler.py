"""A DDIM scheduler in the diffusers style: Python timesteps and a Python step index."""

from __future__ import annotations

import torch


class DDIMScheduler:
    def __init__(self, num_train_timesteps: int = 100, beta_start: float = 1e-4, beta_end: float = 0.02,
                 clip_sample: bool = True, eta: float = 0.5, device=None):
        betas = torch.linspace(beta_start, beta_end, num_train_timesteps, device=device)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.final_alpha_cumprod = torch.tensor(1.0, device=device)
        self.num_train_timesteps = num_train_timesteps
        self.clip_sample = clip_sample
        self.eta = eta
        self.timesteps: list[int] = []
        self.step_index = 0

    def set_timesteps(self, num_inference_steps: int) -> None:
        ratio = self.num_train_timesteps // num_inference_steps
        self.timesteps = [i * ratio for i in reversed(range(num_inference_steps))]
        self.num_inference_steps = num_inference_steps
        self.step_index = 0

    def step(self, eps: torch.Tensor, t: int, sample: torch.Tensor) -> torch.Tensor:
        prev_t = t - self.num_train_timesteps // self.num_inference_steps
        alpha_t = self.alphas_cumprod[t]  # expect: GS301
        alpha_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.final_alpha_cumprod  # expect: GS301
        beta_t = 1 - alpha_t
        x0 = (sample - beta_t.sqrt() * eps) / alpha_t.sqrt()
        if self.clip_sample:
            x0 = x0.clamp(-3.0, 3.0)
        variance = (1 - alpha_prev) / beta_t * (1 - alpha_t / alpha_prev)
        sigma = self.eta * variance.sqrt()
        direction = (1 - alpha_prev - sigma**2).clamp_min(0).sqrt() * eps
        prev = alpha_prev.sqrt() * x0 + direction
        if self.eta > 0:
            prev = prev + sigma * torch.randn_like(sample)
        self.step_index += 1  # expect: GS302
        return prev
