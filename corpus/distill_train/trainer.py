"""Knowledge-distillation trainer: frozen teacher, graphed student, EMA, DDP."""

from __future__ import annotations

import json
import logging
import os
import random
import warnings
from datetime import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from config import DistillConfig
from ema import ModelEMA
from losses import feature_match, kd_kl
from models import Student, Teacher

logger = logging.getLogger("distill")


def init_distributed(backend: str = "nccl") -> int:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"  # expect: GS705
    dist.init_process_group(backend)
    return dist.get_rank()


class DistillTrainer:
    def __init__(self, cfg: DistillConfig, device: torch.device, progress=None):
        self.cfg = cfg
        self.device = device
        self.teacher = Teacher(cfg.in_dim, cfg.teacher_width, cfg.n_classes).to(device).eval()
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.student = Student(cfg.in_dim, cfg.student_width, cfg.n_classes).to(device)
        self._features: dict[str, torch.Tensor] = {}
        self.student.register_forward_hook(self._keep_student_logits)  # expect: GS706
        self.projector = nn.Linear(cfg.n_classes, cfg.teacher_width).to(device)
        self.opt = torch.optim.SGD(self.student.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=True)
        self.proj_opt = torch.optim.Adam(self.projector.parameters(), lr=cfg.proj_lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.fp16)
        self.ema = ModelEMA(self.student, cfg.ema_decay)
        self.progress = progress
        self.epoch = 0
        self.kd_temperature = cfg.kd_t_start
        self.grad_norms: list[float] = []
        self.last_step_at = None
        self.teacher_conf = torch.zeros((), device=device)
        self.static_x = torch.zeros(cfg.batch_size, cfg.in_dim, device=device)
        self.static_y = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        self.static_loss = torch.zeros((), device=device)
        self.graph = None

    def _keep_student_logits(self, module, inputs, output):
        self._features["student"] = output

    @property
    def kd_weight(self) -> float:
        return self.cfg.alpha_max * min(1.0, self.epoch / self.cfg.alpha_ramp)

    def wrap_ddp(self) -> None:
        if dist.is_available() and dist.is_initialized():
            self.student = DDP(self.student, device_ids=[self.device.index])  # expect: GS704

    def train_step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        prior = torch.as_tensor(self.cfg.class_prior, device=x.device)  # expect: GS402
        with torch.no_grad():
            t_logits, t_feat = self.teacher(x)
        with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.cfg.fp16):
            s_logits = self.student(x)
            ce = F.cross_entropy(s_logits + prior.log(), y)
            kd = kd_kl(s_logits, t_logits, self.kd_temperature)
            if (t_logits.argmax(-1) == y).float().mean() < 0.2:  # expect: GS201
                kd = kd * 0.0
            w = self.kd_weight
            loss = w * kd + (1.0 - w) * ce  # expect: GS301
            if random.random() > self.cfg.feature_dropout:  # expect: GS502
                loss = loss + self.cfg.feature_weight * feature_match(self.projector(s_logits), t_feat)
        conf = t_logits.softmax(-1).amax(-1)
        self.teacher_conf = 0.9 * self.teacher_conf + 0.1 * conf.mean()  # expect: GS401
        if conf.min() > 0.99:  # expect: GS201
            warnings.warn("teacher is saturated; raise the KD temperature")  # expect: GS501
        self.opt.zero_grad(set_to_none=False)
        self.proj_opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        gn = torch.nn.utils.clip_grad_norm_(self.student.parameters(), self.cfg.grad_clip)
        if self.cfg.log_grad_norm:
            self.grad_norms.append(float(gn))  # expect: GS105, GS503
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.proj_opt.step()  # expect: GS701
        self.ema.update(self.student)
        self.last_step_at = datetime.now()  # expect: GS502
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()  # expect: GS405
        if self.progress is not None:
            self.progress.set_postfix(loss=loss.item())  # expect: GS101, GS505
        if self.cfg.metrics_path:
            with open(self.cfg.metrics_path, "a") as fh:  # expect: GS504
                json.dump({"epoch": self.epoch, "temperature": self.kd_temperature}, fh)  # expect: GS504
        return loss.detach()

    def graph_student(self) -> None:
        sample = torch.randn(self.cfg.batch_size, self.cfg.in_dim, device=self.device, requires_grad=True)
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            self.student = torch.cuda.make_graphed_callables(self.student, (sample,))

    def capture_step(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # expect: GS704
                self.train_step(self.static_x, self.static_y)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self.train_step(self.static_x, self.static_y)

    def save_checkpoint(self, path: str) -> None:
        torch.save({"student": self.student.state_dict(), "ema": self.ema.state_dict(),
                    "epoch": self.epoch}, path)

    def fit(self, batches: list[tuple[torch.Tensor, torch.Tensor]], epochs: int, last_losses: dict) -> float:
        if self.device.type == "cuda":
            if self.cfg.graph_mode == "student":
                self.graph_student()
            else:
                self.wrap_ddp()
                self.capture_step()
        total = 0.0
        for epoch in range(epochs):
            self.epoch = epoch
            frac = epoch / max(epochs - 1, 1)
            self.kd_temperature = self.cfg.kd_t_start + frac * (self.cfg.kd_t_end - self.cfg.kd_t_start)
            for x, y in batches:
                self.static_x.copy_(x)
                self.static_y.copy_(y)
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self.static_loss.copy_(self.train_step(self.static_x, self.static_y))
                total += self.static_loss.item()
            last_losses[epoch] = self.static_loss  # expect: GS407
            if self.cfg.ckpt_dir and (epoch + 1) % self.cfg.ckpt_every == 0:
                self.save_checkpoint(os.path.join(self.cfg.ckpt_dir, f"student_{epoch}.pt"))
            logger.info("epoch %d done, kd temperature %.2f", epoch, self.kd_temperature)
        return total
