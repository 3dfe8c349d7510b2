"""Optimisation loop: one captured training iteration per sampled camera."""

from __future__ import annotations

import logging
import math
import random

import torch
import torch.nn.functional as F

from cameras import CameraSet
from config import SplatConfig
from gaussians import GaussianModel
from losses import l1_loss, ssim
from progress import ProgressBar
from renderer import render
from schedules import position_lr

logger = logging.getLogger(__name__)


class SplatTrainer:
    def __init__(self, cfg: SplatConfig, cameras: CameraSet, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.cameras = cameras
        self.gaussians = GaussianModel(cfg, device).to(device)
        self.optimizer = torch.optim.Adam(self.gaussians.param_groups(cfg), lr=0.0, eps=1e-15)
        bg = [1.0, 1.0, 1.0] if cfg.white_background else [0.0, 0.0, 0.0]
        self.background = torch.tensor(bg, dtype=torch.float32, device=device)
        self.iteration = 0
        self.ema_loss = 0.0
        self.last_mean_radius: torch.Tensor | None = None
        self.loss_history: list[float] = []
        self.pbar = ProgressBar(total=0, desc="Training progress")
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_loss: torch.Tensor | None = None

    def update_learning_rate(self, iteration: int) -> None:
        for group in self.optimizer.param_groups:
            if group["name"] == "xyz":
                group["lr"] = position_lr(iteration, self.cfg)  # expect: GS301

    def set_background(self, white: bool) -> None:
        self.background = torch.ones(3, device=self.device) if white else torch.zeros(3, device=self.device)  # expect: GS401

    def train_step(self) -> torch.Tensor:
        self.update_learning_rate(self.iteration)
        cam_idx = random.randrange(len(self.cameras))  # expect: GS502
        viewmat, gt_image = self.cameras.viewmats[cam_idx], self.cameras.images[cam_idx]  # expect: GS301 (a host draw's number, frozen where it enters device work)
        bg = torch.rand(3).to(self.device) if self.cfg.random_background else self.background  # expect: GS402, GS502
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106

        out = render(viewmat, self.gaussians, bg, self.cfg)
        image = out["render"]
        if image.amax() > 1.0:  # expect: GS201
            image = image.clamp(max=1.0)
        l1 = l1_loss(image, gt_image)
        loss = (1.0 - self.cfg.lambda_dssim) * l1 + self.cfg.lambda_dssim * (1.0 - ssim(image, gt_image))
        assert torch.isfinite(loss), f"non-finite loss at iteration {self.iteration}"  # expect: GS201
        loss.backward()

        with torch.no_grad():
            mean_radius = self.gaussians.add_densification_stats(out["viewspace_points"].grad, out["radii"])
            if self.iteration % self.cfg.densify_interval == 0:  # expect: GS301
                n_live = self.gaussians.densify_and_prune(self.cfg.densify_grad_threshold, self.cfg.min_opacity)
                logger.info("densified: %d live gaussians", n_live)  # expect: GS501
                torch.cuda.empty_cache()  # expect: GS405
            if self.iteration % self.cfg.opacity_reset_interval == 0:  # expect: GS301
                self.gaussians.reset_opacity()
            self.optimizer.step()  # expect: GS701
            self.optimizer.zero_grad(set_to_none=False)

        self.iteration += 1  # expect: GS302
        self.ema_loss = 0.4 * loss.item() + 0.6 * self.ema_loss  # expect: GS101
        psnr = -10.0 * math.log10(F.mse_loss(image.detach(), gt_image).item() + 1e-10)  # expect: GS101
        self.pbar.set_postfix(loss=f"{self.ema_loss:.7f}", psnr=f"{psnr:.2f}")  # expect: GS505
        self.loss_history.append(self.ema_loss)  # expect: GS503
        self.last_mean_radius = mean_radius
        return loss.detach()

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step()

    def fit(self, steps: int) -> dict[int, torch.Tensor]:
        losses: dict[int, torch.Tensor] = {}
        self.pbar.total = steps
        for it in range(steps):
            if it > 0 and it % self.cfg.sh_degree_interval == 0:
                self.gaussians.oneup_sh_degree()
            if it == self.cfg.background_switch_step:
                self.set_background(white=not self.cfg.white_background)
            if self.graph is not None:
                self.graph.replay()
                losses[it] = self.static_loss  # expect: GS407
            else:
                losses[it] = self.train_step()
            self.pbar.update(1)
        return losses
