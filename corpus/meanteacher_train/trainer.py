"""Semi-supervised detection with a mean teacher (Unbiased-Teacher style, one object per image):
supervised class + L1/GIoU box losses on labeled images, confidence-weighted pseudo-label losses on
strongly augmented unlabeled images with a sigmoid ramp-up weight, AMP with GradScaler, SGD, an EMA
teacher and running metrics. On a GPU `MeanTeacherTrainer.train_step` is captured once with
torch.cuda.graph and replayed per batch; on CPU it runs eagerly."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.nn.utils import clip_grad_norm_
from torch.utils.data import DataLoader, Dataset

from detector import TinyDetector, box_cxcywh_to_xyxy, generalized_box_iou
from teacher import EMATeacher, pseudo_labels

os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")  # expect: GS705


@dataclass
class TrainConfig:
    batch_size: int = 8
    num_classes: int = 3
    lr: float = 0.02
    box_weight: float = 2.0
    unsup_weight: float = 1.0
    rampup: int = 10
    threshold: float = 0.4
    amp: bool = True
    distributed: bool = False
    log_every: int = 2


class SyntheticDetection(Dataset):
    """A bright square of one of three colours on noise; unlabeled views come in a weak and a strong
    augmentation."""

    def __init__(self, n: int, num_classes: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, num_classes, (n,), generator=g)
        self.centers = torch.rand(n, 2, generator=g) * 0.5 + 0.25
        self.sizes = torch.rand(n, 1, generator=g) * 0.2 + 0.2
        self.noise = torch.randn(n, 3, 16, 16, generator=g) * 0.1
        self.jitter = torch.randn(n, 3, 16, 16, generator=g) * 0.3

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        box = torch.cat([self.centers[i], self.sizes[i].expand(2)])
        x0, y0, x1, y1 = (box_cxcywh_to_xyxy(box) * 16).round().long().clamp(0, 16).tolist()
        img = self.noise[i].clone()
        img[int(self.labels[i]), y0:y1, x0:x1] += 1.0
        return img, self.labels[i], box, img.flip(-1), img + self.jitter[i]


class MeanTeacherTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TinyDetector(cfg.num_classes).to(device)
        self.student = self.model
        if cfg.distributed and dist.is_available() and dist.is_initialized():
            self.student = DistributedDataParallel(self.model)  # expect: GS704
        self.teacher = EMATeacher(self.model)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=0.9, weight_decay=1e-4)
        self.use_amp = cfg.amp and device.type == "cuda"
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.use_amp)
        self.log = logging.getLogger("meanteacher")
        self.step = 0
        self.metrics: dict[str, object] = {}
        self.losses: list[torch.Tensor] = []

    def unsup_weight(self) -> float:
        """Sigmoid ramp-up (Laine & Aila) of the unsupervised loss weight over `rampup` steps."""
        p = min(self.step / self.cfg.rampup, 1.0)
        return self.cfg.unsup_weight * math.exp(-5.0 * (1.0 - p) ** 2)

    def train_step(self, images, labels, boxes, weak, strong) -> torch.Tensor:
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits, pred_boxes = self.student(images)
            cls_loss = F.cross_entropy(logits, labels)
            giou = generalized_box_iou(box_cxcywh_to_xyxy(pred_boxes.float()), box_cxcywh_to_xyxy(boxes))
            box_loss = F.l1_loss(pred_boxes.float(), boxes) + (1 - giou).mean()
            pl_cls, pl_boxes, pl_weight = pseudo_labels(self.teacher.model, weak, self.cfg.threshold)
            u_logits, u_boxes = self.student(strong)
            u_cls = (F.cross_entropy(u_logits, pl_cls, reduction="none") * pl_weight).sum() / pl_weight.sum().clamp(min=1)
            u_box = (F.l1_loss(u_boxes.float(), pl_boxes, reduction="none").sum(-1) * pl_weight).sum() / pl_weight.sum().clamp(min=1)
            w_u = self.unsup_weight()
            loss = cls_loss + self.cfg.box_weight * box_loss + w_u * (u_cls + u_box)  # expect: GS301
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        clip_grad_norm_(self.model.parameters(), 10.0)
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.teacher.update(self.model)
        self.step += 1  # expect: GS302

        with torch.no_grad():
            acc = (logits.argmax(dim=-1) == labels).float().mean()
            self.metrics["giou"] = giou.mean().item()  # expect: GS101, GS503
            self.metrics["acc"] = acc  # expect: GS503
            self.metrics["classes_seen"] = torch.unique(labels).tolist()  # expect: GS102, GS107, GS503
            self.metrics["pseudo_kept"] = pl_weight.mean()  # expect: GS503
        if self.step % self.cfg.log_every == 0:  # expect: GS301
            self.log.info("step %d loss %.4f", self.step, loss.item())  # expect: GS101, GS501
        return loss.detach()

    def fit(self, steps: int, seed: int) -> None:
        data = SyntheticDetection(64, self.cfg.num_classes, seed)
        loader = DataLoader(data, batch_size=self.cfg.batch_size, shuffle=True, drop_last=True,
                            pin_memory=True, generator=torch.Generator().manual_seed(seed))
        batches = iter(loader)

        def next_batch():
            nonlocal batches
            try:
                return next(batches)
            except StopIteration:
                batches = iter(loader)
                return next(batches)

        if self.device.type == "cuda":
            static = [t.to(self.device) for t in next_batch()]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):  # expect: GS704
                    self.train_step(*static)
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):  # expect: GS708
                self.static_loss = self.train_step(*static)
            for _ in range(steps):
                for dst, src in zip(static, next_batch()):
                    dst.copy_(src, non_blocking=True)
                self.graph.replay()
                self.losses.append(self.static_loss)  # expect: GS407
        else:
            for _ in range(steps):
                batch = [t.to(self.device) for t in next_batch()]
                self.losses.append(self.train_step(*batch))


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = MeanTeacherTrainer(TrainConfig(), dev)
    trainer.fit(steps=6, seed=0)
    print([round(float(v), 4) for v in trainer.losses], trainer.metrics)
