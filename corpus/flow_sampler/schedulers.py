"""A flow-matching Euler scheduler in the shape of diffusers' FlowMatchEulerDiscreteScheduler:
shifted sigmas from 1 (noise) to 0 (data), a Python `step_index` that advances on every `step`."""

from __future__ import annotations

import torch


class FlowMatchEulerScheduler:
    def __init__(self, num_train_timesteps: int = 1000, shift: float = 3.0):
        self.num_train_timesteps = num_train_timesteps
        self.shift = shift
        self.step_index = 0
        self.sigmas = torch.ones(1)
        self.timesteps = torch.ones(1)

    def set_timesteps(self, num_inference_steps: int, device: torch.device) -> None:
        s = torch.linspace(1.0, 1.0 / num_inference_steps, num_inference_steps)
        s = self.shift * s / (1 + (self.shift - 1) * s)
        self.sigmas = torch.cat([s, torch.zeros(1)]).to(device)  # expect: GS401
        self.timesteps = self.sigmas[:-1] * self.num_train_timesteps  # expect: GS401
        self.num_inference_steps = num_inference_steps
        self.step_index = 0

    def current_timestep(self) -> torch.Tensor:
        return self.timesteps[self.step_index]  # expect: GS301

    def step(self, velocity: torch.Tensor, sample: torch.Tensor) -> torch.Tensor:
        sigma = self.sigmas[self.step_index]  # expect: GS301
        sigma_next = self.sigmas[self.step_index + 1]  # expect: GS301
        prev_sample = sample + (sigma_next - sigma) * velocity
        self.step_index += 1  # expect: GS302
        return prev_sample
