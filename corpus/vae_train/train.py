"""VAE trainer: KL annealing, free bits, EMA weights, sample grids and a progress bar."""

from __future__ import annotations

import os
import time

import torch

from config import VAEConfig
from ema import ModelEMA
from losses import active_units, elbo
from vae import VAE
from viz import save_image_grid

try:
    from tqdm.auto import tqdm
except ImportError:  # tqdm is optional
    tqdm = None


class _NullBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, **kwargs) -> None:
        pass

    def write(self, msg: str) -> None:
        pass

    def close(self) -> None:
        pass


def kl_schedule(step: int, cfg: VAEConfig) -> float:
    return cfg.kl_max * min(1.0, step / max(1, cfg.kl_anneal_steps))


class VAETrainer:
    def __init__(self, cfg: VAEConfig, device: torch.device, out_dir: str, total_steps: int):
        self.cfg = cfg
        self.device = device
        self.out_dir = out_dir
        self.model = VAE(cfg, device).to(device)
        self.ema = ModelEMA(self.model, decay=cfg.ema_decay)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
        self.global_step = 0
        self.running_recon = torch.zeros((), device=device)
        self.latent_bank = torch.zeros(0, cfg.latent_dim, device=device)
        self.kl_history: dict[str, list[torch.Tensor]] = {"kl": [], "active": []}
        self.step_times: list[float] = []
        self.pbar = tqdm(total=total_steps, desc="vae", disable=True) if tqdm is not None else _NullBar()
        self._step = self.train_step
        if device.type == "cuda" and cfg.compile:
            self._step = torch.compile(self.train_step, mode="reduce-overhead")

    def train_step(self, x: torch.Tensor, kl_weight: float) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        self.model.train()
        recon_logits, mu, logvar = self.model(x)
        terms = elbo(recon_logits, x, mu, logvar, kl_weight=kl_weight, free_bits=self.cfg.free_bits)
        self.opt.zero_grad(set_to_none=True)
        terms.loss.backward()
        self.opt.step()
        self.ema.update(self.model)

        collapsed = terms.kl_per_dim.max() < self.cfg.active_threshold
        if collapsed:  # expect: GS201
            self.pbar.write("posterior collapse: every latent dimension is below the KL threshold")  # expect: GS505
        self.running_recon = 0.98 * self.running_recon + 0.02 * terms.recon.detach()  # expect: GS401
        self.latent_bank = torch.cat([self.latent_bank, mu.detach()])  # expect: GS404
        self.kl_history["kl"].append(terms.kl.detach())  # expect: GS503
        self.kl_history["active"].append(active_units(terms.kl_per_dim, self.cfg.active_threshold))  # expect: GS503
        if self.global_step % self.cfg.sample_every == 0:  # expect: GS301
            path = os.path.join(self.out_dir, "samples", f"step_{self.global_step:05d}.pgm")
            save_image_grid(recon_logits[: self.cfg.grid_rows ** 2], path, rows=self.cfg.grid_rows)
        self.pbar.set_postfix(loss=f"{terms.loss.item():.3f}", kl_w=kl_weight)  # expect: GS101, GS505
        self.pbar.update(1)  # expect: GS505
        self.step_times.append(time.perf_counter() - t0)  # expect: GS502, GS503
        return terms.loss.detach()

    def fit(self, batches: list[torch.Tensor]) -> list[float]:
        losses = []
        for x in batches:
            x = x.to(self.device, non_blocking=True)
            loss = self._step(x, kl_schedule(self.global_step, self.cfg))
            losses.append(loss.item())
            self.global_step += 1
        self.pbar.close()
        return losses

    @torch.no_grad()
    def sample(self, n: int) -> torch.Tensor:
        z = torch.randn(n, self.cfg.latent_dim, device=self.device)
        images = self.ema.module.decoder(z)
        save_image_grid(images, os.path.join(self.out_dir, "ema_samples.pgm"), rows=self.cfg.grid_rows)
        return images
