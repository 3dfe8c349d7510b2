from __future__ import annotations

import torch
import torch.nn as nn

from config import DiffusionConfig


class NoiseSchedule(nn.Module):
    def __init__(self, cfg: DiffusionConfig):
        super().__init__()
        betas = torch.linspace(cfg.beta_start, cfg.beta_end, cfg.num_timesteps, dtype=torch.float64)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.betas_list = betas.tolist()
        self.register_buffer("sqrt_ab", alphas_cumprod.sqrt().float())
        self.register_buffer("sqrt_1mab", (1.0 - alphas_cumprod).sqrt().float())
        self.register_buffer("snr_table", (alphas_cumprod / (1.0 - alphas_cumprod)).float())
        self.register_buffer("t_probs", torch.full((cfg.num_timesteps,), 1.0 / cfg.num_timesteps))

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        return self.sqrt_ab[t].unsqueeze(-1) * x0 + self.sqrt_1mab[t].unsqueeze(-1) * noise

    def snr(self, t: torch.Tensor) -> torch.Tensor:
        return self.snr_table[t]

    def beta_at(self, t: torch.Tensor) -> torch.Tensor:
        return torch.tensor(self.betas_list, device=t.device)[t]  # expect: GS402

    def sample_timesteps(self, batch_size: int, device: torch.device, importance: bool) -> torch.Tensor:
        if not importance:
            return torch.randint(0, self.t_probs.shape[0], (batch_size,), device=device)
        dist = torch.distributions.Categorical(probs=self.t_probs)  # expect: GS111
        return dist.sample((batch_size,))
