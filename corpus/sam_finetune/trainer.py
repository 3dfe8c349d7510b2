"""Fine-tuning loop: frozen image encoder, trainable prompt encoder + mask decoder."""

from __future__ import annotations

import json
import logging
import os
import time

import torch
import torch.nn.functional as F

from config import SamConfig
from losses import check_finite, dice_loss, focal_loss, mask_iou
from modeling import ImageEncoder, MaskDecoder, PromptEncoder
from prompts import boxes_from_masks, error_region_point, jitter_boxes, sample_points

logger = logging.getLogger("sam_finetune")


def warmup_factor(step: int, warmup: int) -> float:
    return min(1.0, (step + 1) / max(1, warmup))


class SamFinetuner:
    def __init__(self, cfg: SamConfig, device: torch.device, out_dir: str):
        self.cfg = cfg
        self.device = device
        self.out_dir = out_dir
        self.encoder = ImageEncoder(cfg).to(device).eval()
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        self.prompt_encoder = PromptEncoder(cfg).to(device)
        self.decoder = MaskDecoder(cfg).to(device)
        params = list(self.prompt_encoder.parameters()) + list(self.decoder.parameters())
        self.opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=1e-4)
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(cfg.seed)
        self.focal_weight = cfg.focal_weight
        self.updates = 0
        self.iou_history = torch.zeros(0, device=device)
        self.loss_ema = torch.zeros((), device=device)
        self.chosen_counts: dict[int, torch.Tensor] = {}
        self.per_step: list[torch.Tensor] = []
        self.graph = None
        self.static_images = torch.zeros(cfg.batch_size, cfg.image_size, cfg.image_size, device=device)
        self.static_masks = torch.zeros_like(self.static_images)
        self.static_loss = None

    @property
    def lr_now(self) -> float:
        return self.cfg.lr * warmup_factor(self.updates, self.cfg.warmup_steps)

    def decode(self, emb, points, labels, boxes=None):
        tokens = self.prompt_encoder(points, labels, boxes)
        return self.decoder(emb, tokens)

    def pick_mask(self, masks: torch.Tensor, iou_pred: torch.Tensor) -> torch.Tensor:
        if not self.cfg.multimask:
            return masks[:, 0]
        best = iou_pred.argmax(dim=1)
        return masks[torch.arange(masks.shape[0], device=masks.device), best]

    def train_step(self, images: torch.Tensor, gt: torch.Tensor, lr: float) -> torch.Tensor:
        with torch.no_grad():
            emb = self.encoder(images)
        points, labels = sample_points(gt, self.cfg.num_points)
        points = points + torch.rand(points.shape, generator=self.gen, device=points.device) - 0.5  # expect: GS601
        boxes = jitter_boxes(boxes_from_masks(gt), 1.0)
        target = gt.unsqueeze(1)
        total = torch.zeros((), device=images.device)
        for _ in range(self.cfg.refine_iters):
            masks, iou_pred = self.decode(emb, points, labels, boxes)
            boxes = None
            if (iou_pred > 1.0).any():  # expect: GS201
                iou_pred = iou_pred.clamp(max=1.0)
            up = F.interpolate(masks, size=gt.shape[-2:], mode="bilinear", align_corners=False)
            tgt = target.expand_as(up)
            focal = focal_loss(up, tgt, gamma=self.cfg.focal_gamma)
            dice = dice_loss(up, tgt)
            true_iou = mask_iou(up, tgt)
            per_mask = focal * self.focal_weight + dice * self.cfg.dice_weight  # expect: GS301
            best = per_mask.argmin(dim=1) if self.cfg.multimask else torch.zeros_like(per_mask[:, 0]).long()
            loss = per_mask.gather(1, best[:, None]).mean()
            loss = loss + self.cfg.iou_weight * F.mse_loss(iou_pred, true_iou.detach())
            total = total + loss
            chosen = self.pick_mask(up.detach(), iou_pred.detach())
            extra = error_region_point(chosen, gt)
            if extra is None:
                break
            points = torch.cat([points, extra[0]], dim=1)
            labels = torch.cat([labels, extra[1]], dim=1)
        total = check_finite(total)
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        self.opt.zero_grad(set_to_none=False)
        total.backward()
        torch.nn.utils.clip_grad_norm_(self.decoder.parameters(), 1.0, error_if_nonfinite=True)  # expect: GS110
        self.opt.step()  # expect: GS701
        self.updates += 1  # expect: GS302
        self.loss_ema = 0.9 * self.loss_ema + 0.1 * total.detach()  # expect: GS401
        self.iou_history = torch.cat([self.iou_history, true_iou.mean(0)])  # expect: GS404
        hard = true_iou[true_iou < 0.5]  # expect: GS108
        self.per_step.append(hard.sum())  # expect: GS503
        self.last_choice = best.tolist()  # expect: GS102
        self.chosen_counts[id(best)] = best.float().mean()  # expect: GS503, GS506
        if self.updates % self.cfg.log_every == 0:  # expect: GS301
            logger.info("step %d lr %.2e", self.updates, lr)  # expect: GS501
            self.log_memory(total)
        return total.detach()

    def log_memory(self, loss: torch.Tensor) -> None:
        used = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0  # expect: GS405
        stamp = time.time()  # expect: GS502
        if self.cfg.dump_masks:
            with open(os.path.join(self.out_dir, "mem.json"), "w") as fh:  # expect: GS504
                json.dump({"used": used, "t": stamp}, fh)  # expect: GS504
        print(loss)  # expect: GS104

    def capture(self) -> None:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.train_step(self.static_images, self.static_masks, self.cfg.lr)
        torch.cuda.current_stream().wait_stream(s)
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(g, capture_error_mode="thread_local"):
                self.static_loss = self.train_step(self.static_images, self.static_masks, self.lr_now)
        self.graph = g

    def fit_batch(self, images: torch.Tensor, gt: torch.Tensor, history: dict, it: int) -> float:
        if self.device.type == "cuda":
            if self.graph is None:
                self.capture()
            self.static_images.copy_(images)
            self.static_masks.copy_(gt)
            self.graph.replay()
            history[it] = self.static_loss  # expect: GS407
            return float(self.static_loss)
        loss = self.train_step(images, gt, self.lr_now)
        history[it] = loss
        return float(loss.item())
