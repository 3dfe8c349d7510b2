"""VQGAN trainer: autoencoder + codebook + patch discriminator, one captured step per batch."""

from __future__ import annotations

import json
import random

import torch
from torch.utils.data import DataLoader, TensorDataset

from config import VQGANConfig
from discriminator import NLayerDiscriminator
from losses import adaptive_weight, adopt_weight, hinge_d_loss
from lpips import LPIPS
from metrics_logger import MetricsLogger
from modules import Decoder, Encoder
from quantize import VectorQuantizer


class VQGANTrainer:
    def __init__(self, cfg: VQGANConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        m = cfg.model
        self.encoder = Encoder(m).to(device)
        self.quantizer = VectorQuantizer(m.num_codes, m.z_channels, m.beta, m.usage_decay, m.dead_threshold,
                                         device).to(device)
        self.decoder = Decoder(m).to(device)
        self.disc = NLayerDiscriminator(m.in_channels).to(device)
        self.disc_features: list[torch.Tensor] = []
        self.disc.register_forward_hook(self._record_disc_features)  # expect: GS706
        self.perceptual = LPIPS().to(device).eval()
        self.gen_params = [*self.encoder.parameters(), *self.quantizer.parameters(), *self.decoder.parameters()]
        self.opt_g = torch.optim.Adam(self.gen_params, lr=cfg.lr, betas=cfg.betas)
        self.opt_d = torch.optim.Adam(self.disc.parameters(), lr=cfg.lr, betas=cfg.betas)
        self.metrics = MetricsLogger("vqgan")
        self.global_step = 0
        self.device_images = torch.zeros(cfg.batch_size, m.in_channels, cfg.resolution, cfg.resolution,
                                         device=device)
        self.graph = None
        self.static_images = None
        self.static_loss = None
        self.disc_eval = None

    def _record_disc_features(self, module, inputs, output) -> None:
        self.disc_features.append(output.detach())

    def make_loader(self, images: torch.Tensor, generator: torch.Generator) -> DataLoader:
        return DataLoader(TensorDataset(images), batch_size=self.cfg.batch_size, shuffle=True,
                          drop_last=True, pin_memory=True, generator=generator)

    def _stage(self, images: torch.Tensor) -> torch.Tensor:
        if images.device != self.device:
            staged = images.pin_memory()  # expect: GS406
            self.device_images.copy_(staged, non_blocking=True)
            return self.device_images
        return images

    def _dump_usage(self) -> None:
        with open(self.cfg.codebook_dump_path, "a") as f:  # expect: GS504
            json.dump({"step": self.global_step, "restarts": self.quantizer.restarts}, f)  # expect: GS504
            f.write("\n")

    def train_step(self, images: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        self.perceptual.reset_cache()
        images = self._stage(images)
        if random.random() < cfg.flip_prob:  # expect: GS502
            images = images.flip(-1)
        for group in self.opt_g.param_groups:
            group["lr"] = cfg.lr * min(1.0, (self.global_step + 1) / cfg.warmup_steps)  # expect: GS301

        z = self.encoder(images)
        z_q, vq_loss, perplexity, indices = self.quantizer(z)
        recon = self.decoder(z_q)
        rec_loss = (images - recon).abs().mean()
        p_loss = self.perceptual(recon, images).mean()
        nll = rec_loss + cfg.perceptual_weight * p_loss
        logits_fake = self.disc(recon)
        g_loss = -logits_fake.mean()
        d_weight = adaptive_weight(nll, g_loss, self.decoder.last_layer.weight, cfg.disc_weight)
        disc_factor = adopt_weight(cfg.disc_factor, self.global_step, threshold=cfg.disc_start)
        loss = nll + d_weight * disc_factor * g_loss + vq_loss  # expect: GS301
        self.opt_g.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.gen_params, cfg.clip_grad, error_if_nonfinite=True)  # expect: GS110
        self.opt_g.step()  # expect: GS701

        d_loss = torch.zeros((), device=images.device)
        if self.global_step >= cfg.disc_start:  # expect: GS301
            logits_real = self.disc(images.detach())
            logits_fake_d = self.disc(recon.detach())
            d_loss = hinge_d_loss(logits_real, logits_fake_d)
            self.opt_d.zero_grad(set_to_none=False)
            d_loss.backward()
            self.opt_d.step()  # expect: GS701

        if perplexity < cfg.min_perplexity:  # expect: GS201
            self.quantizer.usage.fill_(0.0)
        self.metrics.log({"train/rec_loss": rec_loss.detach(), "train/perplexity": perplexity,  # expect: GS501
                          "train/d_loss": d_loss.detach()}, step=self.global_step)
        if cfg.codebook_dump_path:
            self._dump_usage()
        self.global_step += 1  # expect: GS302
        return loss.detach()

    def capture(self, images: torch.Tensor) -> None:
        self.static_images = images.to(self.device).clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.cfg.graph_warmup_iters):
                self.train_step(self.static_images)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_loss = self.train_step(self.static_images)

    def graph_discriminator(self, sample: torch.Tensor) -> None:
        self.disc_eval = torch.cuda.make_graphed_callables(self.disc, (sample,))

    def fit_step(self, images: torch.Tensor) -> float:
        if self.graph is not None:
            self.static_images = images.to(self.device)  # expect: GS401
            self.graph.replay()
            return float(self.static_loss)
        return float(self.train_step(images.to(self.device)))
