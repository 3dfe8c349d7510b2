"""Training step for the ConvNeXt classifier, captured as one CUDA graph on a GPU."""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from config import SwinConfig
from ema import ModelEma
from losses import smoothed_ce
from model import TinyConvNeXt
from schedule import cosine_lr, drop_path_at, layer_decay_groups

logger = logging.getLogger(__name__)


def init_distributed() -> int:
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")  # expect: GS705
    dist.init_process_group("nccl")
    return dist.get_rank()


class Trainer:
    def __init__(self, cfg: SwinConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TinyConvNeXt(cfg).to(device)
        if cfg.distributed:
            rank = init_distributed()
            self.model = DistributedDataParallel(self.model, device_ids=[rank])  # expect: GS704
        self.opt = torch.optim.AdamW(
            layer_decay_groups(self.model, cfg.weight_decay, cfg.layer_decay), lr=cfg.base_lr
        )
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.amp and device.type == "cuda")
        self.ema = ModelEma(self.model, cfg.ema_decay)
        self.step = 0
        self.spikes = 0
        self.last_grad_norm = 0.0
        self.metrics: dict[str, list] = defaultdict(list)
        self.step_times: list[float] = []
        self.loss_log: list = []
        shape = (cfg.batch_size, cfg.in_chans, cfg.image_size, cfg.image_size)
        self.static_images = torch.zeros(shape, device=device)
        self.static_labels = torch.zeros(cfg.batch_size, dtype=torch.long, device=device)
        self.static_loss = None
        self.graph = None

    def train_step(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        t0 = time.perf_counter()  # expect: GS502
        lr = cosine_lr(self.step, cfg.base_lr, cfg.min_lr, cfg.warmup_steps, cfg.total_steps)
        for group in self.opt.param_groups:
            group["lr"] = lr * group["lr_scale"]  # expect: GS301
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=cfg.amp):
            logits = self.model(images)
            loss = smoothed_ce(logits, labels, cfg.label_smoothing, cfg.class_weights)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_grad, error_if_nonfinite=True)  # expect: GS110
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.opt.zero_grad(set_to_none=False)
        self.ema.update(self.model)
        acc = (logits.argmax(-1) == labels).float().mean()
        self.metrics["train/acc"].append(acc.item())  # expect: GS101, GS503
        self.last_grad_norm = float(norm)  # expect: GS105
        if loss.detach() > cfg.spike_threshold:  # expect: GS201
            self.spikes += 1  # expect: GS302
        self.step += 1  # expect: GS302
        if cfg.verbose:
            logger.debug("step %d lr %.6f", self.step, lr)  # expect: GS501
        if self.device.type == "cuda":
            torch.cuda.synchronize()  # expect: GS106
        self.step_times.append(time.perf_counter() - t0)  # expect: GS502, GS503
        return loss.detach()

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # expect: GS704
                self.train_step(self.static_images, self.static_labels)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_images, self.static_labels)

    def fit(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
        total = 0.0
        for it, (images, labels) in enumerate(batches):
            self.model.set_drop_path(drop_path_at(it, self.cfg.drop_path_max, self.cfg.drop_path_warmup))
            self.static_images = images  # expect: GS401
            self.static_labels.copy_(labels)
            if self.graph is not None:
                self.graph.replay()
            else:
                self.static_loss = self.train_step(self.static_images, self.static_labels)
            self.loss_log.append(self.static_loss)  # expect: GS407
            total += float(self.static_loss)
        if self.device.type == "cuda" and self.graph is None:
            logger.info("peak memory %d", torch.cuda.max_memory_allocated())
        return total / max(1, len(batches))
