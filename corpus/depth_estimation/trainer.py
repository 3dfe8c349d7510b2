"""Self-supervised monocular depth trainer; the optimisation step is graphed on a GPU."""

from __future__ import annotations

import json
import logging
import os
import time

import torch
import torch.nn.functional as F

from config import DepthConfig
from geometry import base_grid, disp_to_depth, warp
from losses import edge_smoothness, photometric, smooth_weight_at
from networks import DepthNet, PoseNet

logger = logging.getLogger(__name__)


class DepthTrainer:
    def __init__(self, cfg: DepthConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.depth = DepthNet(cfg.num_scales).to(device)
        self.pose = PoseNet().to(device)
        params = list(self.depth.parameters()) + list(self.pose.parameters())
        self.opt = torch.optim.Adam(params, lr=cfg.lr)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(cfg.seed)
        self.grid = base_grid(cfg.batch_size, cfg.height, cfg.width, device)
        self.step_count = 0
        self.lr_scale = 1.0
        self.mask_margin = 1e-3
        self.pixels_seen = 0
        self.loss_history: list[torch.Tensor] = []
        self.mask_stats: dict[int, torch.Tensor] = {}
        self.mask_trace = torch.zeros(0, device=device)
        self.running_photo = torch.zeros((), device=device)
        self.step_times: list[float] = []
        self.graph = None
        self.static_target = None
        self.static_sources: list[torch.Tensor] = []

    def _scale_loss(self, scale: int, disp: torch.Tensor, target: torch.Tensor, sources: list[torch.Tensor]):
        disp_up = F.interpolate(disp, size=target.shape[-2:], mode="bilinear", align_corners=False)
        depth = disp_to_depth(disp_up, self.cfg.min_depth, self.cfg.max_depth)
        reproj_terms = []
        identity_terms = []
        for src in sources:
            pose = self.pose(target, src)
            warped = warp(src, depth, pose, self.grid)
            reproj_terms.append(photometric(warped, target, self.cfg.ssim_weight))
            identity_terms.append(photometric(src, target, self.cfg.ssim_weight))
        reproj = torch.cat(reproj_terms, 1)
        identity = torch.cat(identity_terms, 1)
        if self.cfg.automask:
            jitter = torch.randn(identity.shape, generator=self.gen, device=identity.device)  # expect: GS601
            combined = torch.cat([identity + self.mask_margin + 1e-5 * jitter, reproj], 1)  # expect: GS301
        else:
            combined = reproj
        min_loss, idx = combined.min(dim=1)
        automask = idx >= len(sources)
        self.mask_stats[scale] = automask.float().mean()  # expect: GS503
        masked_pixels = torch.nonzero(automask)  # expect: GS107
        photo = min_loss[automask].mean() if masked_pixels.shape[0] > 0 else min_loss.mean()  # expect: GS108, GS201
        self.last_photo = photo.item()  # expect: GS101
        self.running_photo = 0.9 * self.running_photo + 0.1 * photo.detach()  # expect: GS401
        small = F.interpolate(target, size=disp.shape[-2:], mode="bilinear", align_corners=False)
        smooth = edge_smoothness(disp, small)
        return photo + smooth_weight_at(self.step_count, self.cfg.smooth_weight, self.cfg.smooth_warmup) * smooth / (2**scale)  # expect: GS301

    def train_step(self, target: torch.Tensor, sources: list[torch.Tensor], lr_scale: float) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        self.opt.zero_grad(set_to_none=False)
        disps = self.depth(target)
        total = torch.zeros((), device=target.device)
        for scale, disp in enumerate(disps):
            total = total + self._scale_loss(scale, disp, target, sources)
        total = total / len(disps)
        while total > 10.0:  # expect: GS201
            total = total * 0.5
        total.backward()
        params = [p for group in self.opt.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, self.cfg.clip_norm, error_if_nonfinite=True)  # expect: GS110
        for group in self.opt.param_groups:
            group["lr"] = self.cfg.lr * lr_scale  # expect: GS301
        self.opt.step()  # expect: GS701
        self.mask_trace = torch.cat([self.mask_trace, self.mask_stats[0].reshape(1)])  # expect: GS404
        self.step_count += 1  # expect: GS302
        self.pixels_seen = self.pixels_seen + target.numel()  # expect: GS302
        self.loss_history.append(total.detach())  # expect: GS503
        logger.debug("depth step %d done", self.step_count)  # expect: GS501
        if self.cfg.dump_dir is not None:
            with open(os.path.join(self.cfg.dump_dir, "masks.json"), "w") as fh:  # expect: GS504
                json.dump({"step": self.step_count, "scales": len(self.mask_stats)}, fh)  # expect: GS504
        self.step_times.append(time.perf_counter() - t0)  # expect: GS502, GS503
        return total.detach()

    def capture(self, target: torch.Tensor, sources: list[torch.Tensor]) -> None:
        self.static_target = target.clone()
        self.static_sources = [s.clone() for s in sources]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_target, self.static_sources, self.lr_scale)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_target, self.static_sources, self.lr_scale)

    def fit(self, batches, plateau) -> list[float]:
        losses = []
        history = []
        for target, sources in batches:
            if self.graph is not None:
                self.static_target.copy_(target)
                for dst, src in zip(self.static_sources, sources):
                    dst.copy_(src)
                self.graph.replay()
                history.append(self.static_loss)  # expect: GS407
                loss = self.static_loss.clone()
            else:
                loss = self.train_step(target, sources, self.lr_scale)
            value = float(loss)
            self.lr_scale = plateau.update(value)
            self.mask_margin = max(1e-5, self.mask_margin * 0.5)
            losses.append(value)
        return losses


def depth_metrics(pred: torch.Tensor, gt: torch.Tensor, cfg: DepthConfig) -> dict[str, float]:
    valid = gt > cfg.min_depth
    p = pred[valid]
    g = gt[valid]
    p = p * (g.median() / p.median())
    p = p.clamp(cfg.min_depth, cfg.max_depth)
    thresh = torch.maximum(g / p, p / g)
    out = {"abs_rel": ((g - p).abs() / g).mean().item(), "rmse": ((g - p) ** 2).mean().sqrt().item()}
    for i, s in enumerate(cfg.eval_scales):
        out[f"a{i + 1}"] = (thresh < s).float().mean().item()
    return out
