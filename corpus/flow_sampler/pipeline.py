"""Classifier-free-guided rectified-flow sampling. `FlowPipeline.denoise_step` (one Euler step of the
guided velocity) is the region: on a GPU it is captured once with torch.cuda.graph on the first
request and replayed for every step of every request; on CPU it runs eagerly."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from schedulers import FlowMatchEulerScheduler
from velocity import VelocityNet


@dataclass
class PipelineConfig:
    num_steps: int = 8
    guidance_rescale: float = 0.0
    stochastic: bool = False
    churn: float = 0.05
    seed: int = 0
    save_every: int = 0
    out_dir: str = "intermediates"
    progress: bool = False


def rescale_guidance(v: torch.Tensor, v_cond: torch.Tensor, rescale: float) -> torch.Tensor:
    """Guidance rescale (Lin et al. 2023): match the std of the guided velocity to the conditional one."""
    std_cond = v_cond.std(dim=-1, keepdim=True)
    std_cfg = v.std(dim=-1, keepdim=True)
    return rescale * v * (std_cond / std_cfg) + (1 - rescale) * v


class FlowPipeline:
    def __init__(self, model: VelocityNet, scheduler: FlowMatchEulerScheduler, cfg: PipelineConfig, device: torch.device):
        self.model = model.eval()
        self.scheduler = scheduler
        self.cfg = cfg
        self.device = device
        self._null_cache: dict[int, torch.Tensor] = {}
        self.pbar = None
        self.graph: torch.cuda.CUDAGraph | None = None

    def null_labels(self, labels: torch.Tensor) -> torch.Tensor:
        key = id(labels)  # expect: GS506
        if key not in self._null_cache:
            self._null_cache[key] = torch.full_like(labels, self.model.null_class)  # expect: GS503
        return self._null_cache[key]

    @torch.no_grad()
    def denoise_step(self, latents: torch.Tensor, labels: torch.Tensor, guidance_scale: float) -> torch.Tensor:
        t = self.scheduler.current_timestep().expand(latents.shape[0])
        both = self.model(torch.cat([latents, latents]), torch.cat([t, t]), torch.cat([labels, self.null_labels(labels)]))
        v_cond, v_uncond = both.chunk(2)
        v = v_uncond + guidance_scale * (v_cond - v_uncond)  # expect: GS301
        if self.cfg.guidance_rescale > 0:
            v = rescale_guidance(v, v_cond, self.cfg.guidance_rescale)
        latents = self.scheduler.step(v, latents)
        if self.cfg.stochastic:
            torch.manual_seed(self.cfg.seed + self.scheduler.step_index)  # expect: GS602
            latents = latents + self.cfg.churn * torch.randn_like(latents)
        assert torch.isfinite(latents).all(), "sampler diverged"  # expect: GS201
        if self.cfg.save_every and self.scheduler.step_index % self.cfg.save_every == 0:  # expect: GS301
            torch.save(latents, os.path.join(self.cfg.out_dir, f"step_{self.scheduler.step_index:03d}.pt"))  # expect: GS504
        if self.pbar is not None:
            self.pbar.update(1)  # expect: GS505
        return latents

    def _capture(self, labels: torch.Tensor, guidance_scale: float) -> None:
        self.static_latents = torch.zeros(labels.shape[0], 2, device=self.device)
        self.static_labels = labels.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.scheduler.set_timesteps(self.cfg.num_steps, self.device)
                self.denoise_step(self.static_latents, self.static_labels, guidance_scale)
        torch.cuda.current_stream().wait_stream(side)
        self.scheduler.set_timesteps(self.cfg.num_steps, self.device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = self.denoise_step(self.static_latents, self.static_labels, guidance_scale)

    @torch.no_grad()
    def __call__(self, labels: torch.Tensor, guidance_scale: float = 3.0, generator: torch.Generator | None = None):
        """Returns the final samples and the trajectory of intermediate latents."""
        labels = labels.to(self.device)
        self.scheduler.set_timesteps(self.cfg.num_steps, self.device)
        noise = torch.randn(labels.shape[0], 2, generator=generator).to(self.device)
        if self.cfg.progress:
            from tqdm.auto import tqdm

            self.pbar = tqdm(total=self.cfg.num_steps)
        if self.cfg.save_every:
            os.makedirs(self.cfg.out_dir, exist_ok=True)
        trajectory = []
        if self.device.type == "cuda":
            if self.graph is None:
                self._capture(labels, guidance_scale)
            else:
                self.static_labels = labels  # expect: GS401
            self.static_latents.copy_(noise)
            for _ in range(self.cfg.num_steps):
                self.graph.replay()
                self.static_latents.copy_(self.static_out)
                trajectory.append(self.static_out)  # expect: GS407
            return self.static_latents.clone(), trajectory
        latents = noise
        for _ in range(self.cfg.num_steps):
            latents = self.denoise_step(latents, labels, guidance_scale)
            trajectory.append(latents)
        return latents, trajectory


def build(seed: int, device: torch.device, cfg: PipelineConfig | None = None) -> FlowPipeline:
    torch.manual_seed(seed)
    return FlowPipeline(VelocityNet().to(device), FlowMatchEulerScheduler(), cfg or PipelineConfig(), device)


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pipe = build(0, dev)
    for scale in (1.0, 4.0):
        x, traj = pipe(torch.arange(8) % 4, guidance_scale=scale, generator=torch.Generator().manual_seed(1))
        print(scale, x.norm(dim=-1).mean().item(), len(traj))
