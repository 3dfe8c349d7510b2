"""LightningModule-style wrapper: loss, grad accumulation, LR schedule and the optimizer step."""

from __future__ import annotations

import math
import time

import torch

from config import TrainConfig
from fabric_utils import TrainModule
from model import GPT


def get_lr(it: int, cfg: TrainConfig) -> float:
    if it < cfg.warmup_iters:
        return cfg.learning_rate * (it + 1) / (cfg.warmup_iters + 1)
    if it > cfg.lr_decay_iters:
        return cfg.min_lr
    ratio = (it - cfg.warmup_iters) / (cfg.lr_decay_iters - cfg.warmup_iters)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.learning_rate - cfg.min_lr)


def total_grad_norm(parameters) -> torch.Tensor:
    grads = [p.grad for p in parameters if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))


class LitGPT(TrainModule):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.cfg = cfg
        self.model = GPT(cfg.model)
        self.optimizer = self.model.configure_optimizers(cfg.weight_decay, cfg.learning_rate, cfg.betas)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.dtype == "float16")
        self.iter_num = 0
        self.skipped_steps = 0
        self.t0 = time.time()
        self.act_norms: list[float] = []

    def activation_hook(self, module: torch.nn.Module, inputs, output: torch.Tensor) -> None:
        self.act_norms.append(output.detach().float().norm().item())

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], micro_step: int) -> torch.Tensor:
        x, y = batch
        with torch.autocast(device_type=x.device.type, dtype=getattr(torch, self.cfg.dtype)):
            _, loss = self.model(x, y)
            loss = loss / self.cfg.gradient_accumulation_steps
        self.scaler.scale(loss).backward()
        if micro_step == 0:
            self.log("train/loss", loss.item() * self.cfg.gradient_accumulation_steps, prog_bar=True)
        return loss.detach()

    def optimizer_step(self) -> None:
        lr = get_lr(self.iter_num, self.cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr  # expect: GS301
        self.scaler.unscale_(self.optimizer)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        if norm > 10 * self.cfg.grad_clip:  # expect: GS201
            self.skipped_steps += 1  # expect: GS302
        if self.scaler.is_enabled():
            self.scaler.step(self.optimizer)  # expect: GS703
        else:
            self.optimizer.step()  # expect: GS701
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=False)
        now = time.time()  # expect: GS502
        self.log("train/lr", lr)  # expect: GS501
        self.log("train/grad_norm", norm.item())  # expect: GS101, GS501
        self.log("perf/step_ms", (now - self.t0) * 1000.0)  # expect: GS501
        self.t0 = now
        self.iter_num += 1  # expect: GS302
