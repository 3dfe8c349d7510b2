"""Training loop for the quantile forecaster: scheduled sampling, AMP scaler, validation hook."""

from __future__ import annotations

import logging
import os
import random

import torch

from callbacks import EarlyStopping
from config import ForecastConfig
from data import WindowSampler, left_pad
from losses import forecast_metrics, pinball_loss
from model import Seq2SeqForecaster
from schedule import lr_at, scheduled_sampling_mask, set_lr, teacher_forcing_prob

logger = logging.getLogger(__name__)


class ForecastTrainer:
    def __init__(self, cfg: ForecastConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = Seq2SeqForecaster(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.use_amp)
        self.median_idx = cfg.quantiles.index(0.5)
        self.noise_std = cfg.input_noise
        self.global_step = 0
        self.best_train = float("inf")
        self.last_loss = 0.0
        self.running = {"mase": 0.0, "smape": torch.zeros((), device=device)}
        self.recent_preds = torch.zeros(0, cfg.horizon, device=device)
        self.activation_norms: list[float] = []
        self.pbar = None
        self.early = EarlyStopping(cfg.patience)
        self.step_fn = self.train_step
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")

    def train_step(
        self, windows: list[torch.Tensor], target: torch.Tensor, lr: float, tf_prob: float
    ) -> torch.Tensor:
        cfg = self.cfg
        if cfg.reseed_every_step:
            torch.manual_seed(cfg.seed + self.global_step)  # expect: GS602
        ctx, pad_mask = left_pad(windows)
        jitter = random.gauss(1.0, cfg.jitter_std)  # expect: GS502
        ctx = ctx * jitter  # expect: GS301 (a host draw's number, frozen where it enters device work)
        ctx = ctx + self.noise_std * torch.randn_like(ctx) * (~pad_mask)  # expect: GS301
        tf_mask = scheduled_sampling_mask(target.shape, tf_prob, ctx.device)
        with torch.autocast(device_type=ctx.device.type, dtype=torch.bfloat16, enabled=cfg.use_amp):
            pred = self.model(ctx, pad_mask, target, tf_mask)
            loss = pinball_loss(pred, target, cfg.quantiles)
        set_lr(self.opt, lr)
        self.opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()

        median = pred[..., self.median_idx].detach()
        metrics = forecast_metrics(median, target, ctx, pad_mask, cfg.season)
        self.running["mase"] += float(metrics["mase"])  # expect: GS105, GS503
        self.running["smape"] += metrics["smape"].detach()  # expect: GS503
        self.recent_preds = torch.cat([self.recent_preds, median])  # expect: GS401, GS404
        if loss < self.best_train:  # expect: GS201
            self.best_train = loss.detach()
        self.global_step += 1  # expect: GS302
        self.last_loss = loss.item()  # expect: GS101
        logger.debug(f"step {self.global_step} pinball {loss:.4f}")  # expect: GS104, GS501
        if self.pbar is not None:
            self.pbar.update(1)  # expect: GS505
        if cfg.dump_batches:
            torch.save({"ctx": ctx, "pred": pred}, os.path.join(cfg.out_dir, f"batch_{self.global_step}.pt"))  # expect: GS504
        return loss.detach()

    def _record_activation(self, module, inputs, output) -> None:
        self.activation_norms.append(float(output.detach().norm()))

    def graph_encoder(self, sample_ctx: torch.Tensor, sample_mask: torch.Tensor) -> None:
        enc = self.model.encoder
        if self.cfg.track_activations:
            enc.register_forward_hook(self._record_activation)  # expect: GS706
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            self.model.encoder = torch.cuda.make_graphed_callables(enc, (sample_ctx, sample_mask))

    @torch.no_grad()
    def validate(self, sampler: WindowSampler, batches: int = 2) -> float:
        self.model.eval()
        total = 0.0
        for _ in range(batches):
            windows, target = sampler.sample(self.cfg.batch_size)
            ctx, pad_mask = left_pad([w.to(self.device) for w in windows])
            target = target.to(self.device)
            no_teacher = torch.zeros_like(target, dtype=torch.bool)
            pred = self.model(ctx, pad_mask, target, no_teacher)
            total += pinball_loss(pred, target, self.cfg.quantiles).item()
        self.model.train()
        val = total / batches
        if self.early.step(val):
            logger.info("early stopping: no improvement for %d validations", self.early.bad_rounds)
        return val

    def fit(self, sampler: WindowSampler, val_sampler: WindowSampler, steps: int) -> list[float]:
        losses = []
        for it in range(steps):
            if self.early.should_stop:
                break
            windows, target = sampler.sample(self.cfg.batch_size)
            windows = [w.to(self.device) for w in windows]
            tf_prob = teacher_forcing_prob(self.global_step, self.cfg)
            lr = lr_at(self.global_step, self.cfg)
            self.noise_std = self.cfg.input_noise * (1.0 - it / max(1, steps))
            loss = self.step_fn(windows, target.to(self.device), lr, tf_prob)
            losses.append(float(loss))
            if (it + 1) % self.cfg.val_every == 0:
                self.validate(val_sampler)
        return losses
