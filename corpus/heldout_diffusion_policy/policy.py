"""Diffusion policy: trains a noise predictor on action chunks and samples them with DDIM."""

from __future__ import annotations

import logging
import time

import torch
import torch.nn.functional as F

from config import PolicyConfig
from ema import EMAModel
from networks import NoisePredictor, ObsEncoder
from normalizer import ActionNormalizer
from scheduler import DDIMScheduler

logger = logging.getLogger("diffusion_policy")


class DiffusionPolicy:
    def __init__(self, cfg: PolicyConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.encoder = ObsEncoder(cfg.obs_dim, cfg.n_obs_steps, cfg.hidden).to(device)
        self.net = NoisePredictor(cfg.action_dim, cfg.hidden, cfg.hidden, cfg.n_blocks, cfg.grad_checkpoint).to(device)
        self.ema = EMAModel(self.net, cfg.ema)
        self.scheduler = DDIMScheduler(cfg.schedule, device)
        self.normalizer = ActionNormalizer(cfg.action_low, cfg.action_high)
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.enc_opt = torch.optim.Adam(self.encoder.parameters(), lr=cfg.encoder_lr)
        self.noise_gen = torch.Generator(device=self.device)
        self.noise_gen.manual_seed(cfg.seed)
        self.global_step = 0
        self.step_index = 0
        self.train_losses: list[torch.Tensor] = []
        self.stats: dict[str, int] = {}
        self.denoise_trace: list[torch.Tensor] = []
        b, h = cfg.batch_size, cfg.horizon
        self.static_obs = torch.zeros(b, cfg.n_obs_steps, cfg.obs_dim, device=device)
        self.static_actions = torch.zeros(b, h, cfg.action_dim, device=device)
        self.static_is_pad = torch.zeros(b, h, dtype=torch.bool, device=device)
        self.static_loss = torch.zeros((), device=device)
        self.static_cond = torch.zeros(1, cfg.hidden, device=device)
        self.static_sample = torch.zeros(1, h, cfg.action_dim, device=device)
        self.static_next = torch.zeros_like(self.static_sample)
        self.train_graph: torch.cuda.CUDAGraph | None = None
        self.denoise_graph: torch.cuda.CUDAGraph | None = None

    def train_step(self, obs: torch.Tensor, actions: torch.Tensor, is_pad: torch.Tensor) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        cond = self.encoder(obs)
        target = self.normalizer.normalize(actions)
        noise = torch.randn(target.shape, generator=self.noise_gen, device=target.device)  # expect: GS601
        timesteps = torch.randint(0, self.cfg.schedule.num_train_timesteps, (target.shape[0],), device=target.device)
        noisy = self.scheduler.add_noise(target, noise, timesteps)
        pred = self.net(noisy, timesteps, cond)
        per_step = F.mse_loss(pred, noise, reduction="none").mean(-1)
        loss = per_step[~is_pad].mean()  # expect: GS108
        if not torch.isfinite(loss):  # expect: GS201
            raise FloatingPointError("non-finite diffusion loss")
        self.opt.zero_grad(set_to_none=False)
        self.enc_opt.zero_grad(set_to_none=False)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.cfg.grad_clip)
        n_clipped = int(grad_norm > self.cfg.grad_clip)  # expect: GS105
        self.opt.step()  # expect: GS701
        self.enc_opt.step()  # expect: GS701
        self.ema.step(self.net)
        if self.cfg.low_memory:
            torch.cuda.empty_cache()  # expect: GS405
        self.train_losses.append(loss.detach())  # expect: GS503
        self.stats["clipped"] = self.stats.get("clipped", 0) + n_clipped  # expect: GS503
        elapsed_ms = 1e3 * (time.perf_counter() - t0)  # expect: GS502
        logger.debug("step %d loss %.4f (%.1f ms)", self.global_step, loss.item(), elapsed_ms)  # expect: GS101, GS501
        self.global_step += 1  # expect: GS302
        return loss.detach()

    def capture_train(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_obs, self.static_actions, self.static_is_pad)
        torch.cuda.current_stream().wait_stream(side)
        self.train_graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cfg.use_amp):  # expect: GS702
            with torch.cuda.graph(self.train_graph):
                self.static_loss = self.train_step(self.static_obs, self.static_actions, self.static_is_pad)

    def train_on(self, obs: torch.Tensor, actions: torch.Tensor, is_pad: torch.Tensor) -> torch.Tensor:
        if self.train_graph is None:
            return self.train_step(obs, actions, is_pad)
        self.static_obs.copy_(obs)
        self.static_actions.copy_(actions)
        self.static_is_pad.copy_(is_pad)
        self.train_graph.replay()
        return self.static_loss.clone()

    @torch.no_grad()
    def denoise_step(self, sample: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        t = self.scheduler.timesteps[self.step_index]  # expect: GS301
        eps = self.ema.averaged(sample, t.expand(sample.shape[0]), cond)
        if torch.isnan(eps).any():  # expect: GS201
            eps = torch.nan_to_num(eps)
        return self.scheduler.step(eps, self.step_index, sample)

    def capture_denoise(self) -> None:
        self.denoise_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.denoise_graph):
            self.static_next = self.denoise_step(self.static_sample, self.static_cond)

    @torch.no_grad()
    def predict_action(self, obs_hist: torch.Tensor) -> torch.Tensor:
        self.static_cond.copy_(self.encoder(obs_hist.to(self.device)))
        self.scheduler.set_timesteps(self.cfg.schedule.num_inference_steps)
        self.static_sample.copy_(torch.randn(self.static_sample.shape, device=self.device))
        for i in range(self.cfg.schedule.num_inference_steps):
            self.step_index = i
            if self.denoise_graph is not None:
                self.denoise_graph.replay()
            else:
                self.static_next.copy_(self.denoise_step(self.static_sample, self.static_cond))
            self.denoise_trace.append(self.static_next)  # expect: GS407
            self.static_sample.copy_(self.static_next)
        chunk = self.normalizer.unnormalize(self.static_sample[0])
        return chunk[: self.cfg.n_action_steps]
