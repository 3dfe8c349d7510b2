from __future__ import annotations

import math
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from augment import GPUAugment
from config import MoCoConfig
from model import MoCo
from stats import AverageMeter, accuracy_at_k


def setup_distributed(cfg: MoCoConfig) -> None:
    if not cfg.distributed:
        return
    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"  # expect: GS705
    dist.init_process_group("nccl")


class MoCoTrainer:
    def __init__(self, cfg: MoCoConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        setup_distributed(cfg)
        self.moco = MoCo(cfg).to(device)
        self.model = self.moco
        if cfg.distributed:
            self.model = DistributedDataParallel(self.moco, device_ids=[device.index])  # expect: GS704
        self.augment = GPUAugment(cfg, device)
        self.opt = torch.optim.SGD(self.moco.encoder_q.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=1e-4)
        self.meters = {name: AverageMeter(name) for name in ("loss", "acc@1", "acc@5")}
        self.loss_history: list[torch.Tensor] = []
        self.momentum = cfg.base_momentum
        self.graph: torch.cuda.CUDAGraph | None = None

    def momentum_at(self, it: int, total: int) -> float:
        return 1.0 - (1.0 - self.cfg.base_momentum) * (math.cos(math.pi * it / max(total, 1)) + 1) / 2

    def train_step(self, images: torch.Tensor, momentum: float) -> torch.Tensor:  # graphsafe: region
        im_q, im_k = self.augment(images), self.augment(images)
        logits, labels = self.model(im_q, im_k, momentum)
        loss = F.cross_entropy(logits, labels)
        loss = loss if torch.isfinite(loss) else torch.zeros_like(loss)  # expect: GS201
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        acc1, acc5 = accuracy_at_k(logits, labels, topk=self.cfg.topk)
        self.meters["acc@1"].record(acc1.item(), images.shape[0])  # expect: GS101
        self.meters["acc@5"].record(float(acc5), images.shape[0])  # expect: GS105
        self.loss_history.append(loss.detach())  # expect: GS503
        if self.cfg.dump_queue_stats:
            norms = self.moco.queue.keys.norm(dim=0).cpu()  # expect: GS103
            torch.save(norms, os.path.join(self.cfg.out_dir, "queue_norms.pt"))  # expect: GS504
            with open(os.path.join(self.cfg.out_dir, "queue_ptr.txt"), "a") as f:  # expect: GS504
                f.write(f"{self.moco.queue.ptr}\n")
        return loss.detach()

    def capture(self, images: torch.Tensor) -> None:
        self.static_images = images.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # expect: GS704
                self.train_step(self.static_images, self.momentum)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_images, self.momentum)

    def fit(self, batches: list[torch.Tensor]) -> list[float]:
        losses = []
        for it, images in enumerate(batches):
            self.momentum = self.momentum_at(it, len(batches))
            if self.device.type == "cuda":
                if self.graph is None:
                    self.capture(images.to(self.device))
                self.static_images.copy_(images, non_blocking=True)
                self.graph.replay()
                loss = self.static_loss.clone()
            else:
                loss = self.train_step(images, self.momentum)
            self.meters["loss"].record(loss.item(), images.shape[0])
            losses.append(loss.item())
        return losses
