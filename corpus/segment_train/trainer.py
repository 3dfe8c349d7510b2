"""Training loop with a graphed train step and poly LR."""

from __future__ import annotations

import logging

import torch
from torch.utils.data import DataLoader

from config import SegConfig
from losses import balanced_weights, class_histogram, seg_loss
from model import SegNet
from schedule import poly_lr, set_lr

logger = logging.getLogger("seg")


def make_loader(samples, cfg: SegConfig) -> DataLoader:
    return DataLoader(samples, batch_size=cfg.batch_size, shuffle=False, drop_last=True, pin_memory=True)


class SegTrainer:
    def __init__(self, cfg: SegConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = SegNet(cfg.n_classes, cfg.width).to(device)
        head = list(self.model.head.parameters()) + list(self.model.aux.parameters())
        head_ids = {id(p) for p in head}
        body = [p for p in self.model.parameters() if id(p) not in head_ids]
        self.opt = torch.optim.SGD([{"params": body}, {"params": head, "lr_mult": 10.0}],
                                   lr=cfg.base_lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
        self.aug_gen = torch.Generator(device=self.device)
        self.aug_gen.manual_seed(cfg.seed)
        self.class_counts = torch.ones(cfg.n_classes, dtype=torch.long, device=device)
        self.loss_weights = torch.ones(cfg.n_classes, device=device)
        self.running_loss = 0.0
        self.lr = cfg.base_lr

    def train_step(self, image: torch.Tensor, target: torch.Tensor, lr: float) -> torch.Tensor:
        if self.cfg.random_flip:
            flip = torch.rand(image.shape[0], generator=self.aug_gen, device=image.device) < 0.5  # expect: GS601
            image = torch.where(flip[:, None, None, None], image.flip(-1), image)
            target = torch.where(flip[:, None, None], target.flip(-1), target)
        if (target == self.cfg.ignore_index).all():  # expect: GS201
            return image.new_zeros(())
        self.class_counts.add_(class_histogram(target, self.cfg.ignore_index)[: self.cfg.n_classes])
        self.loss_weights.copy_(balanced_weights(self.class_counts, self.cfg.cb_c))
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.amp):
            out, aux = self.model(image)
        background = out[:, [0]]  # expect: GS402
        loss = seg_loss(out.float(), aux.float(), target, self.loss_weights, self.cfg.ignore_index, self.cfg.aux_weight)
        loss = loss + self.cfg.bg_reg * background.float().pow(2).mean()
        if torch.isnan(loss) or torch.isinf(loss):  # expect: GS201
            logger.error("non-finite loss, skipping update")  # expect: GS501
            return loss.detach()
        set_lr(self.opt, lr)
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        self.opt.step()
        self.running_loss = 0.98 * self.running_loss + 0.02 * loss.item()  # expect: GS101
        return loss.detach()

    def fit(self, samples, iters: int, curve: list) -> None:
        loader = make_loader(samples, self.cfg)
        static_img = torch.zeros(self.cfg.batch_size, 3, self.cfg.crop, self.cfg.crop, device=self.device)
        static_tgt = torch.zeros(self.cfg.batch_size, self.cfg.crop, self.cfg.crop, dtype=torch.long, device=self.device)
        graph = None
        if self.device.type == "cuda":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.train_step(static_img, static_tgt, self.lr)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cfg.amp):  # expect: GS702
                with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                    static_loss = self.train_step(static_img, static_tgt, self.lr)
        it = 0
        while it < iters:
            for img, tgt in loader:
                if it >= iters:
                    break
                self.lr = poly_lr(self.cfg.base_lr, it, self.cfg.max_iters, self.cfg.poly_power)
                static_img.copy_(img)
                static_tgt = tgt.to(self.device, non_blocking=True)  # expect: GS401
                if graph is not None:
                    graph.replay()
                else:
                    static_loss = self.train_step(static_img, static_tgt, self.lr)
                curve.append(static_loss)  # expect: GS407
                it += 1
