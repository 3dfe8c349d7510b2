from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from config import NeRFConfig
from field import NeRFField
from logging_utils import MetricsLogger, log
from rays import SphereRays
from render import volume_render
from sampling import points_along, sample_pdf, stratified_samples


class NeRFTrainer:
    def __init__(self, cfg: NeRFConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.field_coarse = NeRFField(cfg.num_freqs, cfg.hidden).to(device)
        self.field_fine = NeRFField(cfg.num_freqs, cfg.hidden).to(device)
        params = list(self.field_coarse.parameters()) + list(self.field_fine.parameters())
        self.opt = torch.optim.Adam(params, lr=cfg.lr, eps=1e-8)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(cfg.seed)
        self.loader = DataLoader(SphereRays(cfg.num_rays, cfg.seed), batch_size=cfg.batch_rays, shuffle=True,
                                 drop_last=True, pin_memory=True,
                                 generator=torch.Generator().manual_seed(cfg.seed))
        self.metrics_logger = MetricsLogger("nerf")
        self.psnr_ema = torch.zeros((), device=device)
        self.psnr_log: list[float] = []
        self.lr = cfg.lr
        self.it = 0
        self.graph: torch.cuda.CUDAGraph | None = None

    def render_rays(self, rays: torch.Tensor) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        near_far = torch.tensor([self.cfg.near, self.cfg.far], device=rays.device)  # expect: GS402
        z_coarse = stratified_samples(rays, near_far, self.cfg.n_coarse, self.gen)
        out_coarse = volume_render(self.field_coarse(points_along(rays, z_coarse)), z_coarse, self.cfg.white_bkgd)
        torch.cuda.empty_cache()  # expect: GS405
        mids = 0.5 * (z_coarse[..., 1:] + z_coarse[..., :-1])
        z_fine = sample_pdf(mids, out_coarse["weights"][..., 1:-1].detach(), self.cfg.n_fine, self.gen)
        z_all, _ = torch.sort(torch.cat([z_coarse, z_fine.detach()], dim=-1), dim=-1)
        out_fine = volume_render(self.field_fine(points_along(rays, z_all)), z_all, self.cfg.white_bkgd)
        return out_coarse, out_fine

    def train_step(self, rays: torch.Tensor, target: torch.Tensor, lr: float) -> torch.Tensor:
        if self.cfg.deterministic_sampling:
            self.gen.manual_seed(self.cfg.seed)  # expect: GS602
        self.opt.param_groups[0]["lr"] = lr  # expect: GS301
        out_coarse, out_fine = self.render_rays(rays)
        mse_coarse = F.mse_loss(out_coarse["rgb"], target)
        mse_fine = F.mse_loss(out_fine["rgb"], target)
        loss = mse_coarse + mse_fine
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()  # expect: GS701
        with torch.no_grad():
            psnr = -10.0 * torch.log10(mse_fine)
            self.psnr_ema = 0.9 * self.psnr_ema + 0.1 * psnr  # expect: GS401
            self.psnr_log.append(psnr.item())  # expect: GS101, GS503
        self.metrics_logger.log(loss=loss.detach(), psnr=psnr, depth=out_fine["depth_mean"].detach())  # expect: GS501
        log.info(f"iter {self.it}: psnr {psnr:.2f}")  # expect: GS104, GS501
        if self.cfg.dump_predictions:
            pred = out_fine["rgb"].detach().cpu()  # expect: GS103
            torch.save(pred, os.path.join(self.cfg.out_dir, f"pred_{self.it:05d}.pt"))  # expect: GS504
        self.it += 1  # expect: GS302
        return loss.detach()

    def _graph_fields(self, rays: torch.Tensor) -> None:
        pts = torch.zeros(rays.shape[0], self.cfg.n_coarse + self.cfg.n_fine, 3, device=self.device,
                          requires_grad=True)
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            self.field_fine = torch.cuda.make_graphed_callables(self.field_fine, (pts,))

    def _capture(self, rays: torch.Tensor, target: torch.Tensor) -> None:
        self.static_rays, self.static_target = rays.clone(), target.clone()
        self._graph_fields(rays)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(11):
                self.train_step(self.static_rays, self.static_target, self.lr)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.graph.register_generator_state(self.gen)
        self.graph.capture_begin()  # expect: GS708
        self.static_loss = self.train_step(self.static_rays, self.static_target, self.lr)
        self.graph.capture_end()

    def fit(self, iterations: int) -> list[float]:
        losses = []
        batches = iter(self.loader)
        for step in range(iterations):
            rays, target = next(batches)
            if self.device.type == "cuda":
                rays, target = rays.to(self.device, non_blocking=True), target.to(self.device, non_blocking=True)
                if self.graph is None:
                    self._capture(rays, target)
                self.static_rays.copy_(rays)
                self.static_target.copy_(target)
                self.graph.replay()
                loss = self.static_loss.item()
            else:
                loss = self.train_step(rays, target, self.lr).item()
            self.lr *= self.cfg.lr_decay
            for f in (self.field_coarse, self.field_fine):
                f.advance_window(self.cfg.num_freqs / self.cfg.anneal_iters)
            losses.append(loss)
        return losses
