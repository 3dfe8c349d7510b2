import copy
import json
import logging
from datetime import datetime
from pathlib import Path

import torch

from networks import Denoiser, FeatureDistance
from scalings import append_dims, boundary_scalings
from schedules import karras_sigmas, num_scales_at, target_ema_decay

log = logging.getLogger("cd")


class ConsistencyDistiller:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.teacher = Denoiser(cfg.channels, cfg.hidden).to(device).requires_grad_(False)
        self.student = Denoiser(cfg.channels, cfg.hidden).to(device)
        self.target = copy.deepcopy(self.student).requires_grad_(False)
        self.distance = FeatureDistance(cfg.channels, cfg.hidden).to(device)
        self.opt = torch.optim.RAdam(self.student.parameters(), lr=cfg.lr)
        self.teacher_stats: list = []
        self.teacher.register_forward_hook(self._record_teacher)  # expect: GS706
        self.t_gen = torch.Generator(device=self.device)
        self.t_gen.manual_seed(cfg.seed)
        self.global_step = 0
        self.num_scales = cfg.s0
        self.sigmas = karras_sigmas(self.num_scales, cfg.sigma_min, cfg.sigma_max, cfg.rho, device)
        self.recent_sigmas = torch.zeros(8, device=device)
        self.sigma_log = torch.zeros(0, cfg.batch_size, device=device)
        self.scale_usage: dict[int, int] = {}
        self.loss_history: list = []
        self.graph = None

    def _record_teacher(self, module, inputs, output):
        self.teacher_stats.append(output.detach().abs().mean())

    def graph_teacher(self, x: torch.Tensor, sigma: torch.Tensor) -> None:
        self.teacher = torch.cuda.make_graphed_callables(self.teacher, (x, sigma))

    def consistency_fn(self, net, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        c_skip, c_out = boundary_scalings(sigma, self.cfg.sigma_data, self.cfg.sigma_min)
        return append_dims(c_skip, x.dim()) * x + append_dims(c_out, x.dim()) * net(x, sigma)

    def heun_step(self, x: torch.Tensor, sigma: torch.Tensor, sigma_next: torch.Tensor) -> torch.Tensor:
        d = (x - self.teacher(x, sigma)) / append_dims(sigma, x.dim())
        x_euler = x + d * append_dims(sigma_next - sigma, x.dim())
        d_next = (x_euler - self.teacher(x_euler, sigma_next)) / append_dims(sigma_next, x.dim())
        return x + 0.5 * (d + d_next) * append_dims(sigma_next - sigma, x.dim())

    def train_step(self, x0: torch.Tensor) -> torch.Tensor:
        b = x0.shape[0]
        u = torch.rand(b, generator=self.t_gen, device=x0.device)  # expect: GS601
        idx = (u * (self.num_scales - 1)).long()  # expect: GS301
        sigma_s, sigma_t = self.sigmas[idx], self.sigmas[idx + 1]
        assert (sigma_s > 0).all() and (sigma_t <= self.cfg.sigma_max * 1.01).all()  # expect: GS201
        noise = torch.randn(x0.shape, device=x0.device)
        x_t = x0 + noise * append_dims(sigma_t, x0.dim())
        with torch.no_grad():
            x_s = self.heun_step(x_t, sigma_t, sigma_s)
            target_out = self.consistency_fn(self.target, x_s, sigma_s)
        student_out = self.consistency_fn(self.student, x_t, sigma_t)
        sd2 = x0.new_tensor(self.cfg.sigma_data ** 2)  # expect: GS402
        weight = 1.0 / (sigma_t - sigma_s + sd2.sqrt() * 1e-3)
        loss = (weight * (student_out - target_out).pow(2).mean(dim=(1, 2, 3))).mean()
        if self.num_scales >= self.cfg.lpips_from_scales:  # expect: GS301
            perceptual = self.distance(student_out, target_out).mean()
            lpips_w = self.cfg.lpips_weight if perceptual > self.cfg.lpips_threshold else 0.5 * self.cfg.lpips_weight  # expect: GS201
            loss = loss + lpips_w * perceptual
        if loss.isnan():  # expect: GS201
            loss = torch.zeros_like(loss)
        collapsed = torch.allclose(student_out, target_out)  # expect: GS109
        distinct = torch.unique(idx).numel()  # expect: GS107
        boundary_frac = float((idx == 0).float().mean())  # expect: GS105
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        self.opt.step()  # expect: GS701
        mu = target_ema_decay(self.global_step, self.cfg)
        with torch.no_grad():
            for p_t, p in zip(self.target.parameters(), self.student.parameters()):
                p_t.lerp_(p, 1.0 - mu)  # expect: GS301
        self.recent_sigmas = torch.cat([self.recent_sigmas[b:], sigma_t.detach()])  # expect: GS401
        self.sigma_log = torch.vstack([self.sigma_log, sigma_t.detach()[None]])  # expect: GS404
        self.scale_usage[self.num_scales] = self.scale_usage.get(self.num_scales, 0) + 1  # expect: GS503
        if self.cfg.profile_sync and torch.cuda.is_available():
            torch.cuda.synchronize()  # expect: GS106
        stamp = datetime.now().isoformat(timespec="seconds")  # expect: GS502
        log.debug("cd %s N=%d distinct=%d boundary=%.2f collapsed=%s loss=%s" % (stamp, self.num_scales, distinct, boundary_frac, collapsed, loss))  # expect: GS104, GS501
        if self.cfg.dump_schedule:
            Path(self.cfg.out_dir, "schedule.json").write_text(json.dumps({"N": self.num_scales}))  # expect: GS504
        ok = not torch.isfinite(x_s).all()  # expect: GS201
        self.global_step += 1  # expect: GS302
        return loss.detach() * (1.0 - ok * 0.0)

    def set_discretisation(self, n: int) -> None:
        self.num_scales = n
        self.sigmas = karras_sigmas(n, self.cfg.sigma_min, self.cfg.sigma_max, self.cfg.rho, self.device)  # expect: GS401

    def capture(self, x0: torch.Tensor) -> None:
        self.static_x0 = x0.clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_x0)

    def fit(self, batches) -> list[float]:
        losses = []
        for step, x0 in enumerate(batches):
            self.set_discretisation(num_scales_at(step, self.cfg))
            if self.graph is not None:
                self.static_x0.copy_(x0)
                self.graph.replay()
                self.loss_history.append(self.static_loss)  # expect: GS407
                losses.append(float(self.static_loss))
            else:
                losses.append(float(self.train_step(x0.to(self.device))))
        return losses
