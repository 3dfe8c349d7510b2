"""Classifier-free-guidance sampling pipeline with a graphed denoising step."""

from __future__ import annotations

import time
from typing import Callable, Optional

import torch

from config import SamplerConfig
from preview import save_preview
from samplers import dpmpp_2m_step, euler_ancestral_step, rescale_noise_cfg
from schedules import KarrasScheduler, guidance_at
from unet import LatentDecoder, TinyUNet


class CFGPipeline:
    def __init__(self, cfg: SamplerConfig, device: torch.device, progress=None):
        self.cfg = cfg
        self.device = device
        self.unet = TinyUNet(cfg).to(device).eval()
        self.decoder = LatentDecoder(cfg).to(device).eval()
        if cfg.check_nans:
            self.decoder.register_forward_hook(self._check_decoded)  # expect: GS706
        self.scheduler = KarrasScheduler(cfg, device)
        self.noise_gen = torch.Generator(device=self.device)
        self.pbar = progress
        self.nfe = 0
        self.step_index = 0
        self.guidance = cfg.guidance_start
        self.started = 0.0
        self.step_seconds: list[float] = []
        self._context_cache: dict = {}
        shape = (cfg.batch_size, cfg.latent_channels, cfg.latent_size, cfg.latent_size)
        self.static_x = torch.zeros(shape, device=device)
        self.old_denoised = torch.zeros(shape, device=device)
        self.trajectory = torch.zeros((0, *shape), device=device)
        self.cond = torch.zeros(cfg.batch_size, 3, cfg.context_dim, device=device)
        self.uncond = torch.zeros(cfg.batch_size, 3, cfg.context_dim, device=device)
        self.graph = None
        self.static_out = None

    def _check_decoded(self, module, inputs, output):
        if not torch.isfinite(output).all():
            raise FloatingPointError("decoder produced non-finite pixels")

    def context(self) -> torch.Tensor:
        ctx = self._context_cache.get((self.cond.data_ptr(), self.uncond.data_ptr()))  # expect: GS506
        if ctx is None:
            ctx = torch.cat([self.uncond, self.cond])
            self._context_cache[(self.cond.data_ptr(), self.uncond.data_ptr())] = ctx  # expect: GS503, GS506
        return ctx

    def guided_denoise(self, x: torch.Tensor, sigma: torch.Tensor, guidance: float) -> torch.Tensor:
        sigma_val = sigma.item()  # expect: GS101
        c_in = 1.0 / (sigma_val**2 + 1.0) ** 0.5
        eps = self.unet(torch.cat([x, x]) * c_in, sigma.log().expand(2 * x.shape[0]) / 4, self.context())
        eps_uncond, eps_cond = eps.chunk(2)
        eps_guided = eps_uncond + guidance * (eps_cond - eps_uncond)  # expect: GS301
        if guidance > self.cfg.rescale_threshold:  # expect: GS301
            eps_guided = rescale_noise_cfg(eps_guided, eps_cond, self.cfg.guidance_rescale)
        self.nfe += 2  # expect: GS302
        return x - sigma * eps_guided

    def sample_step(self, x: torch.Tensor, i: int, guidance: float) -> torch.Tensor:
        sigmas = self.scheduler.sigmas
        sigma = sigmas[i]  # expect: GS301
        sigma_next = sigmas[i + 1]  # expect: GS301
        denoised = self.guided_denoise(x, sigma, guidance)
        if self.cfg.sampler == "euler_a":
            if self.cfg.fixed_noise_seed is not None:
                self.noise_gen.manual_seed(self.cfg.fixed_noise_seed)  # expect: GS602
            noise = torch.randn(x.shape, generator=self.noise_gen, device=x.device)  # expect: GS601
            x_next = euler_ancestral_step(x, denoised, sigma, sigma_next, noise, self.cfg.eta)
        else:
            previous = None if i == 0 else self.old_denoised  # expect: GS301
            x_next = dpmpp_2m_step(x, denoised, previous, sigma, sigma_next, sigmas[i - 1])  # expect: GS301
            self.old_denoised.copy_(denoised)
        if torch.isnan(x_next).any():  # expect: GS201
            x_next = torch.nan_to_num(x_next)
        if self.cfg.keep_trajectory:
            self.trajectory = torch.cat([self.trajectory, denoised[None]])  # expect: GS404
        if self.cfg.preview_every and i % self.cfg.preview_every == 0:  # expect: GS301
            save_preview(self.decoder(denoised[:1])[0], self.cfg.preview_dir, i)
        if self.cfg.low_memory:
            torch.cuda.empty_cache()  # expect: GS405
        if self.cfg.verbose:
            print(f"step {i}: sigma={sigma:.3f} guidance={guidance:.2f}")  # expect: GS104, GS501
        if self.pbar is not None:
            self.pbar.update(1)  # expect: GS505
        self.step_seconds.append(time.monotonic() - self.started)  # expect: GS502, GS503
        return x_next

    def capture(self) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                self.sample_step(self.static_x.clone(), self.step_index, self.guidance)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_out = self.sample_step(self.static_x, self.step_index, self.guidance)

    def graph_decoder(self) -> None:
        sample = torch.zeros_like(self.static_x)
        self.decoder = torch.cuda.make_graphed_callables(self.decoder, (sample,))

    def iter_steps(self, latents: torch.Tensor, callback: Optional[Callable] = None):
        n = len(self.scheduler.sigmas) - 1
        self.static_x.copy_(latents * self.scheduler.init_noise_sigma)
        self.started = time.monotonic()
        for i in range(n):
            self.step_index = i
            self.guidance = guidance_at(i, n, self.cfg)
            if self.graph is not None:
                self.graph.replay()
                self.static_x.copy_(self.static_out)
                yield self.static_out  # expect: GS407
            else:
                out = self.sample_step(self.static_x, i, self.guidance)
                self.static_x.copy_(out)
                yield out.clone()
            if callback is not None:
                callback(i, self.static_x)

    def __call__(self, cond: torch.Tensor, num_steps: int, seed: int, callback=None) -> torch.Tensor:
        self.cond.copy_(cond)
        self.scheduler.set_timesteps(num_steps)
        gen = torch.Generator().manual_seed(seed)
        latents = torch.randn(self.static_x.shape, generator=gen).to(self.device)
        if self.device.type == "cuda":
            self.noise_gen.manual_seed(seed)
            if self.graph is None:
                self.capture()
        else:
            self.noise_gen.manual_seed(seed)
        frames = list(self.iter_steps(latents, callback))
        with torch.no_grad():
            image = self.decoder(frames[-1])
        return image
