"""Trains the top-k SAE; the whole optimisation step is compiled with CUDA graphs on a GPU."""

from __future__ import annotations

import os
import random

import torch

from activations import ActivationStore
from config import SAEConfig
from optim import build_optimizer
from progress import ProgressBar
from resample import resample_dead_latents
from sae import TopKSAE
from schedules import l1_coef_at, lr_at
from stats import FeatureDensity


class SAETrainer:
    def __init__(self, cfg: SAEConfig, store: ActivationStore, device: torch.device):
        self.cfg = cfg
        self.store = store
        self.device = device
        self.sae = TopKSAE(cfg.d_in, cfg.d_sae, cfg.k, cfg.k_aux).to(device)
        self.opt = build_optimizer(self.sae, cfg.lr)
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.use_amp)
        self.density = FeatureDensity(cfg.d_sae, cfg.dead_after, device)
        self.pbar = ProgressBar(cfg.total_steps, desc="sae", enabled=cfg.verbose)
        self.l0_history: list[torch.Tensor] = []
        self.example_features: list[int] = []
        self.n_tokens = 0
        self.n_resampled = 0
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")
        else:
            self.step_fn = self.train_step

    def train_step(self, acts: torch.Tensor, l1_coef: float, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
        if self.cfg.deterministic:
            torch.manual_seed(self.cfg.seed)  # expect: GS602
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        scale = torch.tensor(self.cfg.norm_scale, device=acts.device)  # expect: GS402
        x = acts * scale
        out = self.sae(x)
        recon = (out.recon - x).pow(2).sum(-1).mean()
        l1 = (out.latents.abs() * self.sae.W_dec.norm(dim=-1)).sum(-1).mean()
        dead = self.density.dead_mask()
        aux_coef = self.cfg.aux_coef if dead.any() else 0.0  # expect: GS201
        aux = self.sae.aux_loss(x - out.recon.detach(), out.pre_acts, dead)
        loss = recon + l1_coef * l1 + aux_coef * aux  # expect: GS301
        self.opt.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        self.sae.remove_parallel_grads()
        torch.nn.utils.clip_grad_norm_(self.sae.parameters(), self.cfg.max_grad_norm, error_if_nonfinite=True)  # expect: GS110
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        if not self.sae.decoder_is_unit_norm():
            self.sae.normalize_decoder()
        self.density.update(out.latents, out.indices)
        l0 = (out.latents > 0).float().sum(-1).mean()
        self.l0_history.append(l0.detach())  # expect: GS503
        if self.cfg.verbose:
            print(f"L0 {l0:.1f} recon {recon:.4f}")  # expect: GS104, GS501
        if random.random() < self.cfg.sample_log_prob:  # expect: GS502
            self.example_features = out.indices[0].tolist()  # expect: GS102
        if self.cfg.profile:
            torch.cuda.current_stream().synchronize()  # expect: GS106
        if self.cfg.checkpoint_every_step:
            torch.save(self.sae.state_dict(), os.path.join(self.cfg.out_dir, "sae_last.pt"))  # expect: GS504
        self.pbar.update(1)  # expect: GS505
        self.n_tokens += acts.shape[0]  # expect: GS302
        return loss.detach(), recon.detach()

    def fit(self, steps: int) -> list[float]:
        losses = []
        for step in range(steps):
            acts = self.store.next_batch().to(self.device)
            loss, recon = self.step_fn(acts, l1_coef_at(step, self.cfg), lr_at(step, self.cfg))
            if (step + 1) % self.cfg.resample_every == 0:
                self.n_resampled += resample_dead_latents(
                    self.sae, self.opt, self.density, acts, self.cfg.resample_scale
                )
            losses.append(loss.item())
            self.pbar.render()
        self.pbar.close()
        return losses
