"""Classifier-free-guided DDIM sampling. One denoising step is a capture region (the comment on its
`def` line); on a GPU it is captured once and replayed for every timestep."""

from __future__ import annotations

import logging

import torch

from model import Denoiser
from scheduler import DDIMScheduler

log = logging.getLogger("diffusion")


class Sampler:
    def __init__(self, model: Denoiser, scheduler: DDIMScheduler, guidance_scale: float = 2.0):
        self.model = model.eval()
        self.scheduler = scheduler
        self.guidance_scale = guidance_scale  # fixed for the sampler's lifetime
        self.previews: list[torch.Tensor] = []
        self.check_nans = True

    def progress(self, i: int, t: int, x: torch.Tensor) -> None:
        log.info("denoising step %d/%d (t=%d)", i + 1, self.scheduler.num_inference_steps, t)  # expect: GS501
        print(f"t={t:3d} |x|={x.norm():.3f}")  # expect: GS104, GS501

    @torch.no_grad()
    def denoise_step(self, x: torch.Tensor, t: int, labels: torch.Tensor) -> torch.Tensor:  # graphsafe: region
        null = torch.full_like(labels, self.model.null_class)
        eps = self.model(torch.cat([x, x]), t, torch.cat([labels, null]))
        eps_cond, eps_uncond = eps.chunk(2)
        eps = eps_uncond + self.guidance_scale * (eps_cond - eps_uncond)
        x = self.scheduler.step(eps, t, x)
        if self.check_nans and torch.isnan(x).any():  # expect: GS201
            raise FloatingPointError(f"NaN in sample at t={t}")
        self.previews.append(x.cpu())  # expect: GS103, GS503
        self.progress(self.scheduler.step_index, t, x)
        return x

    @torch.no_grad()
    def sample(self, labels: torch.Tensor, num_steps: int, generator: torch.Generator | None = None):
        self.scheduler.set_timesteps(num_steps)
        self.previews = []
        x = torch.randn(labels.shape[0], 2, generator=generator).to(labels.device)
        if labels.is_cuda:
            static_x = x.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.denoise_step(static_x, self.scheduler.timesteps[0], labels)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = self.denoise_step(static_x, self.scheduler.timesteps[0], labels)
            for _ in self.scheduler.timesteps:
                graph.replay()
                static_x.copy_(static_out)
            return static_x.clone()
        for t in self.scheduler.timesteps:
            x = self.denoise_step(x, t, labels)
        return x


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    sampler = Sampler(Denoiser().to(dev), DDIMScheduler(num_train_timesteps=100, device=dev))
    print(sampler.sample((torch.arange(8) % 4).to(dev), num_steps=10))
