from __future__ import annotations

import logging
import random
import time

import torch
import torch.nn.functional as F

from config import DiffusionConfig
from denoiser import Denoiser
from ema import EMA
from schedule import NoiseSchedule

log = logging.getLogger("ddpm")


class DDPMTrainer:
    def __init__(self, cfg: DiffusionConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = Denoiser(cfg).to(device)
        self.schedule = NoiseSchedule(cfg).to(device)
        self.ema = EMA(self.model, cfg.ema_max_decay)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, betas=(0.9, 0.999), weight_decay=0.01)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.global_step = 0
        self.loss_ema = 0.0
        if device.type == "cuda":
            self._step_fn = torch.compile(self.train_step, mode="reduce-overhead")
        else:
            self._step_fn = self.train_step

    def min_snr_weight(self, t: torch.Tensor) -> torch.Tensor:
        snr = self.schedule.snr(t)
        if (snr <= 0).any():  # expect: GS201
            raise ValueError("schedule produced a non-positive SNR")
        return torch.clamp(snr, max=self.cfg.snr_gamma) / snr

    def drop_labels(self, labels: torch.Tensor) -> torch.Tensor:
        drop = torch.rand(labels.shape, device=labels.device) < self.cfg.uncond_prob
        labels = labels.clone()
        labels[drop] = self.model.null_class
        if random.random() < self.cfg.full_uncond_prob:  # expect: GS502
            labels.fill_(self.model.null_class)
        return labels

    def train_step(self, x0: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.cfg.reseed_every_step:
            torch.manual_seed(self.cfg.seed + self.global_step)  # expect: GS602
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106
            t0 = time.perf_counter()  # expect: GS502
        assert x0.dtype == torch.float32 and x0.dim() == 2
        assert labels.max() < self.cfg.num_classes, "label out of range"  # expect: GS201
        bsz = x0.shape[0]
        t = self.schedule.sample_timesteps(bsz, x0.device, self.cfg.importance_sampling)
        noise = torch.randn_like(x0)
        x_t = self.schedule.q_sample(x0, t, noise)
        pred = self.model(x_t, t, self.drop_labels(labels))
        mse = F.mse_loss(pred, noise, reduction="none").mean(dim=-1)
        loss = (mse * self.min_snr_weight(t)).mean()
        loss = loss + 0.0 * self.schedule.beta_at(t).mean()
        if self.global_step < self.cfg.warmup_steps:  # expect: GS301
            loss = loss * (self.global_step + 1) / self.cfg.warmup_steps  # expect: GS301
        if torch.isnan(loss) or torch.isinf(loss):  # expect: GS201
            log.error("non-finite loss at step %d", self.global_step)  # expect: GS501
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm, error_if_nonfinite=True)  # expect: GS110
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.ema.update(self.model)
        self.loss_ema = 0.98 * self.loss_ema + 0.02 * loss.item()  # expect: GS101, GS302
        self.global_step += 1  # expect: GS302
        if self.cfg.profile:
            peak_mb = torch.cuda.max_memory_allocated() / 2**20  # expect: GS405
            log.debug("step %.2f ms, peak %.0f MB", 1e3 * (time.perf_counter() - t0), peak_mb)  # expect: GS501, GS502
        print(f"step {self.global_step} loss {loss:.4f}")  # expect: GS104, GS501
        return loss.detach()

    def fit(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> list[float]:
        history = []
        for x0, labels in batches:
            loss = self._step_fn(x0.to(self.device), labels.to(self.device))
            history.append(loss.item())
        return history


def make_batches(cfg: DiffusionConfig, steps: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    centers = torch.randn(cfg.num_classes, cfg.data_dim, generator=gen)
    out = []
    for _ in range(steps):
        labels = torch.randint(0, cfg.num_classes, (cfg.batch_size,), generator=gen)
        x0 = centers[labels] + 0.1 * torch.randn(cfg.batch_size, cfg.data_dim, generator=gen)
        out.append((x0, labels))
    return out
