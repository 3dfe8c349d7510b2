"""DINO trainer: one self-distillation step, captured as a CUDA graph on a GPU."""

from __future__ import annotations

import logging
import math
import time

import torch

from config import DINOConfig
from ema import momentum_at, update_teacher
from loss import DINOLoss
from schedules import cosine_at
from utils import cancel_gradients_last_layer, clip_gradients, param_groups_for_decay
from vit import build_student_teacher

logger = logging.getLogger("dino")


class DINOTrainer:
    def __init__(self, cfg: DINOConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.student, self.teacher = build_student_teacher(cfg)
        self.student.to(device)
        self.teacher.to(device)
        ncrops = 2 + cfg.local_crops_number
        nepochs = max(1, cfg.total_steps // cfg.steps_per_epoch)
        self.dino_loss = DINOLoss(cfg.out_dim, ncrops, cfg.warmup_teacher_temp, cfg.teacher_temp,
                                  cfg.warmup_teacher_temp_epochs, nepochs, cfg.student_temp,
                                  cfg.center_momentum).to(device)
        self.optimizer = torch.optim.AdamW(param_groups_for_decay(self.student), lr=cfg.lr)
        self.global_step = 0
        self.epoch = 0
        self.step_times: list[float] = []
        self.loss_history: list = []
        self.peak_mem_mb = 0.0
        self.graph = None
        self.static_crops: list[torch.Tensor] = []
        self.static_loss = None

    def apply_schedules(self) -> None:
        lr = cosine_at(self.global_step, self.cfg.lr, self.cfg.min_lr, self.cfg.total_steps, self.cfg.warmup_steps)
        wd = cosine_at(self.global_step, self.cfg.weight_decay, self.cfg.weight_decay_end, self.cfg.total_steps)
        for i, group in enumerate(self.optimizer.param_groups):
            group["lr"] = lr  # expect: GS301
            if i == 0:
                group["weight_decay"] = wd  # expect: GS301

    def train_step(self, crops: list[torch.Tensor]) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        self.apply_schedules()
        teacher_output = self.teacher(crops[:2])
        student_output = self.student(crops)
        loss = self.dino_loss(student_output, teacher_output, self.epoch)
        if not math.isfinite(loss.item()):  # expect: GS101
            print("Loss is {}, stopping training".format(loss.item()))  # expect: GS101, GS501

        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        if self.cfg.clip_grad:
            clip_gradients(self.student, self.cfg.clip_grad)
        cancel_gradients_last_layer(self.epoch, self.student, self.cfg.freeze_last_layer)
        self.optimizer.step()  # expect: GS701

        m = momentum_at(self.global_step, self.cfg.momentum_teacher, self.cfg.total_steps)
        update_teacher(self.student, self.teacher, m)

        self.global_step += 1  # expect: GS302
        if torch.cuda.is_available():
            self.peak_mem_mb = torch.cuda.max_memory_allocated() / 2**20  # expect: GS405
        logger.debug("dino step %d done", self.global_step)  # expect: GS501
        elapsed = time.perf_counter() - t0  # expect: GS502
        self.step_times.append(elapsed)  # expect: GS503
        return loss.detach()

    def capture(self, crops: list[torch.Tensor]) -> None:
        self.static_crops = [c.to(self.device).clone() for c in crops]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.cfg.graph_warmup_iters):
                self.train_step(self.static_crops)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_crops)

    def fit_step(self, crops: list[torch.Tensor], it: int) -> float:
        self.epoch = it // self.cfg.steps_per_epoch
        if self.graph is not None:
            for dst, src in zip(self.static_crops, crops):
                dst.copy_(src)
            self.graph.replay()
            self.loss_history.append(self.static_loss)  # expect: GS407
            return float(self.static_loss)
        loss = self.train_step([c.to(self.device) for c in crops])
        self.loss_history.append(loss)
        return float(loss)
