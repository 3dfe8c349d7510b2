import math
import random

import torch

from config import MAEConfig
from ema import ModelEMA
from model import TinyMAE, layer_decay_groups
from patches import masked_mse, normalised_targets, patchify, visible_counts


class MAETrainer:
    def __init__(self, cfg: MAEConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = TinyMAE(cfg).to(device)
        self.opt = torch.optim.AdamW(layer_decay_groups(self.model, cfg.base_lr, cfg.layer_decay), weight_decay=0.05)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.ema = ModelEMA(self.model, cfg.ema_base)
        self.recent_masks = torch.zeros(0, (cfg.img // cfg.patch) ** 2, device=device)
        self.visible_log: list = []
        self.graph = None

    def lr_at(self, step: int) -> float:
        if step < self.cfg.warmup_steps:
            return self.cfg.base_lr * (step + 1) / self.cfg.warmup_steps
        return self.cfg.base_lr * 0.5 * (1.0 + math.cos(math.pi * step / 100))

    def mask_ratio_at(self, step: int) -> float:
        frac = min(1.0, step / 50)
        return self.cfg.mask_ratio_start + frac * (self.cfg.mask_ratio_end - self.cfg.mask_ratio_start)

    def train_step(self, imgs: torch.Tensor, lr: float, mask_ratio: float):
        cfg = self.cfg
        if cfg.fixed_probe:
            torch.manual_seed(cfg.seed)  # expect: GS602
        flip = random.random() < cfg.flip_prob  # expect: GS502
        if flip:
            imgs = imgs.flip(-1)
        for g in self.opt.param_groups:
            g["lr"] = lr * g["lr_scale"]  # expect: GS301
        patches = patchify(imgs, cfg.patch)
        n, length, _ = patches.shape
        keep = int(length * (1.0 - mask_ratio))
        noise = torch.rand(n, length, device=imgs.device)
        ids_shuffle = noise.argsort(1)
        ids_restore = ids_shuffle.argsort(1)
        ids_keep = ids_shuffle[:, :keep]  # expect: GS301
        mask = torch.ones(n, length, device=imgs.device)
        mask[:, :keep] = 0.0  # expect: GS301
        mask = torch.gather(mask, 1, ids_restore)
        weights = mask if mask.sum() > 0 else torch.ones_like(mask)  # expect: GS201
        with torch.autocast(imgs.device.type, dtype=torch.bfloat16, enabled=imgs.is_cuda):
            latent = self.model.encode(patches, ids_keep)
            pred = self.model.decode(latent, ids_restore).float()
        target = normalised_targets(patches, cfg.norm_pix)
        loss = masked_mse(pred, target, weights)
        if not torch.isfinite(loss):  # expect: GS201
            return loss.detach()
        self.opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        self.ema.update(self.model)
        self.recent_masks = torch.cat([self.recent_masks, mask[:1]])  # expect: GS404
        self.visible_log.append(visible_counts(mask))  # expect: GS503
        preview = ids_keep[0].cpu()  # expect: GS103
        print(f"loss {loss:.4f} keep {preview.numel()}")  # expect: GS104, GS501
        if cfg.track_memory:
            peak = torch.cuda.max_memory_allocated()  # expect: GS405
            self.visible_log.append(peak)  # expect: GS503
        return loss.detach()

    def capture(self, imgs: torch.Tensor, lr: float, mask_ratio: float) -> None:
        self.static_imgs = imgs.clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_imgs, lr, mask_ratio)

    def fit(self, batches: list) -> dict:
        losses = []
        for step, imgs in enumerate(batches):
            lr = self.lr_at(step)
            ratio = self.mask_ratio_at(step)
            if self.graph is not None:
                self.static_imgs.copy_(imgs)
                self.graph.replay()
                loss = self.static_loss.clone()
            else:
                loss = self.train_step(imgs, lr, ratio)
            losses.append(float(loss))
        return {"loss": losses[-1], "mean_loss": sum(losses) / len(losses), "ema_updates": float(self.ema.updates)}
