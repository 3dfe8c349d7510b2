"""One StyleGAN2 training iteration (D step with lazy R1, G step with lazy path length)."""

from __future__ import annotations

import copy
import logging
import time

import torch

from augment import AdaptiveAugment
from config import StyleGANConfig
from ema import ema_beta, update_ema
from losses import PathLengthRegularizer, d_logistic_loss, g_nonsaturating_loss, r1_penalty
from networks import Discriminator, Generator

logger = logging.getLogger(__name__)


class StyleGANTrainer:
    def __init__(self, cfg: StyleGANConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.G = Generator(cfg, device).to(device)
        self.D = Discriminator(cfg).to(device)
        self.G_ema = copy.deepcopy(self.G).eval().requires_grad_(False)
        self.G_ema.register_forward_hook(self._remember_shape)  # expect: GS706
        self.augment = AdaptiveAugment(cfg)
        self.pl_reg = PathLengthRegularizer(cfg.pl_decay).to(device)
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=cfg.lr_g, betas=cfg.betas)
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=cfg.lr_d, betas=cfg.betas)
        self.step = 0
        self.history: dict[str, list] = {"loss_d": [], "ada_p": []}
        self.last_sample_shape: tuple[int, ...] = ()
        b = cfg.batch_size
        self.static_real = torch.zeros(b, cfg.img_channels, cfg.img_res, cfg.img_res, device=device)
        self.static_z = torch.zeros(b, cfg.z_dim, device=device)
        self.static_z_mix = torch.zeros(b, cfg.z_dim, device=device)
        self.graph = None
        self.static_out = None
        self.sample_fn = None

    def _remember_shape(self, module, inputs, output) -> None:
        self.last_sample_shape = tuple(output.shape)

    def _pl_term(self, z: torch.Tensor, step: int) -> torch.Tensor:
        if step % self.cfg.pl_interval != 0:  # expect: GS301
            return torch.zeros((), device=z.device)
        pl_z = z[: max(1, z.shape[0] // 2)]
        ws = self.G.mapping(pl_z)
        fake = self.G.synthesis(ws)
        penalty = self.pl_reg(fake, ws)
        assert torch.isfinite(penalty).all(), "path length penalty diverged"  # expect: GS201
        return penalty * (self.cfg.pl_weight * self.cfg.pl_interval)

    def train_step(self, real: torch.Tensor, z: torch.Tensor, z_mix: torch.Tensor) -> dict[str, torch.Tensor]:
        cfg = self.cfg
        t0 = time.perf_counter()  # expect: GS502
        self.step += 1  # expect: GS302

        ws = self.G.mapping(z)
        if cfg.style_mixing_prob > 0:
            ws = self.G.mix_styles(ws, z_mix)
        fake = self.G.synthesis(ws)
        real_logits = self.D(self.augment(real))
        fake_logits = self.D(self.augment(fake.detach()))
        loss_d = d_logistic_loss(real_logits, fake_logits)
        if self.step % cfg.r1_interval == 0:  # expect: GS301
            real_r1 = real.detach().requires_grad_(True)
            loss_d = loss_d + r1_penalty(real_r1, self.D(real_r1), cfg.r1_gamma * cfg.r1_interval)
        self.opt_d.zero_grad(set_to_none=False)
        loss_d.backward()
        torch.nn.utils.clip_grad_norm_(self.D.parameters(), cfg.d_clip, error_if_nonfinite=True)  # expect: GS110
        self.opt_d.step()  # expect: GS701
        self.augment.update(real_logits.detach())
        logger.debug(f"D real logits {real_logits.mean():.3f}")  # expect: GS104, GS501

        ws = self.G.mapping(z)
        fake = self.G.synthesis(ws)
        target = torch.ones(fake.shape[0]).to(fake.device)  # expect: GS402
        loss_g = g_nonsaturating_loss(self.D(self.augment(fake)) * target[:, None])
        loss_g = loss_g + self._pl_term(z, self.step)
        if not torch.isfinite(loss_g):  # expect: GS201
            logger.warning("non-finite generator loss, zeroing it")  # expect: GS501
            loss_g = loss_g.nan_to_num(0.0)
        self.opt_g.zero_grad(set_to_none=False)
        loss_g.backward()
        self.opt_g.step()  # expect: GS701

        beta = ema_beta(self.step, cfg.batch_size, cfg.ema_kimg, cfg.ema_rampup)
        update_ema(self.G_ema, self.G, beta)

        self.history["loss_d"].append(loss_d.item())  # expect: GS101, GS503
        self.history["ada_p"].append(self.augment.p)  # expect: GS503
        if cfg.track_memory and self.device.type == "cuda":
            torch.cuda.synchronize()  # expect: GS106
            peak_mb = torch.cuda.max_memory_allocated() / 2**20  # expect: GS405
            logger.debug("peak memory %.1f MB", peak_mb)  # expect: GS501
        elapsed = time.perf_counter() - t0  # expect: GS502
        logger.debug("iteration took %.4fs", elapsed)  # expect: GS501
        return {"loss_g": loss_g.detach(), "loss_d": loss_d.detach()}

    def capture(self, warmup: int) -> None:
        self.graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                self.train_step(self.static_real, self.static_z, self.static_z_mix)
        torch.cuda.current_stream().wait_stream(side)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cfg.use_amp):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_out = self.train_step(self.static_real, self.static_z, self.static_z_mix)

    def graph_sampler(self) -> None:
        self.sample_fn = torch.cuda.make_graphed_callables(self.G_ema, (self.static_z,))

    def fit_batch(self, real: torch.Tensor, z: torch.Tensor, z_mix: torch.Tensor, history: list) -> dict:
        if self.graph is None:
            out = self.train_step(real, z, z_mix)
            history.append({k: v.clone() for k, v in out.items()})
            return out
        self.static_real.copy_(real)
        self.static_z = z  # expect: GS401
        self.static_z_mix.copy_(z_mix)
        self.graph.replay()
        history.append(self.static_out)  # expect: GS407
        return self.static_out

    @torch.no_grad()
    def sample(self, z: torch.Tensor) -> torch.Tensor:
        if self.sample_fn is not None:
            return self.sample_fn(z).clone()
        return self.G_ema(z)
