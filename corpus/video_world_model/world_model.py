"""World-model loss over a clip: posterior rollout with scheduled sampling, balanced KL, reconstruction."""

from __future__ import annotations

import logging
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from config import WorldModelConfig
from nets import RSSM, Decoder, Encoder
from utils import write_pgm


def balanced_kl(post_logits: torch.Tensor, prior_logits: torch.Tensor, n_cat: int, n_cls: int, balance: float) -> torch.Tensor:
    post = post_logits.view(-1, n_cat, n_cls)
    prior = prior_logits.view(-1, n_cat, n_cls)
    lhs = torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=post.detach()), torch.distributions.Categorical(logits=prior)  # expect: GS111
    ).sum(-1)
    rhs = torch.distributions.kl_divergence(
        torch.distributions.Categorical(logits=post), torch.distributions.Categorical(logits=prior.detach())  # expect: GS111
    ).sum(-1)
    return balance * lhs + (1.0 - balance) * rhs


class VideoWorldModel(nn.Module):
    def __init__(self, cfg: WorldModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.rssm = RSSM(cfg)
        self.decoder = Decoder(cfg, cfg.deter + cfg.n_cat * cfg.n_cls)
        self.register_buffer("running_recon", torch.full((), 50.0))
        self.teacher_forcing_p = cfg.tf_start
        self.global_step = 0
        self.rollouts = 0
        self.metrics: dict[str, float] = {}
        self.logger = logging.getLogger("world_model")
        self.ss_gen = torch.Generator(device=cfg.device)
        self.ss_gen.manual_seed(cfg.seed)

    @property
    def kl_beta(self) -> float:
        return min(1.0, (self.global_step + 1) / self.cfg.kl_warmup)

    def forward(self, frames: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        if cfg.reseed_each_step:
            torch.cuda.manual_seed_all(cfg.seed)  # expect: GS602
        b, t = frames.shape[:2]
        skip = random.randint(1, cfg.max_skip)  # expect: GS502
        frames, actions = frames[:, ::skip], actions[:, ::skip]  # expect: GS301 (a host draw's number, frozen where it enters device work)
        embeds = self.encoder(frames.flatten(0, 1)).view(b, -1, cfg.embed)
        h = frames.new_zeros(b, cfg.deter)
        z = frames.new_zeros(b, cfg.n_cat * cfg.n_cls)
        ctx = frames.new_zeros(b, 0, cfg.embed)
        feats, kls = [], []
        for i in range(embeds.shape[1]):
            use_truth = torch.rand(b, 1, generator=self.ss_gen, device=frames.device) < self.teacher_forcing_p  # expect: GS301, GS601
            h, prior_logits, post_logits, z_post = self.rssm.step(h, z, actions[:, i], embeds[:, i])
            z_prior = self.rssm.sample(prior_logits)
            z = torch.where(use_truth, z_post, z_prior)
            ctx = torch.cat((ctx, embeds[:, i, None]), dim=1)[:, -4:]
            kls.append(balanced_kl(post_logits, prior_logits, cfg.n_cat, cfg.n_cls, cfg.kl_balance))
            feats.append(torch.cat([h, z], -1))
        feat = torch.stack(feats, 1)
        pred = self.decoder(feat.flatten(0, 1)).view_as(frames)
        recon = F.mse_loss(pred, frames, reduction="none").flatten(2).sum(-1).mean()
        kl_value = torch.stack(kls, 1).mean()
        kl_loss = torch.maximum(kl_value, torch.tensor(cfg.free_nats, device=kl_value.device))  # expect: GS402
        while kl_loss > cfg.kl_cap:  # expect: GS201
            kl_loss = kl_loss * 0.5
        loss = recon + self.kl_beta * kl_loss  # expect: GS301
        if not torch.isfinite(loss):  # expect: GS201
            loss = recon
        self.running_recon = 0.99 * self.running_recon + 0.01 * recon.detach()  # expect: GS401
        if (recon.detach() > cfg.max_err * self.running_recon).any():  # expect: GS201
            self.logger.warning("reconstruction error spike")  # expect: GS501
        used = torch.unique(actions.argmax(-1))  # expect: GS107
        self.metrics["action_coverage"] = used.shape[0] / cfg.action_dim  # expect: GS503
        self.metrics["kl"] = kl_value.item()  # expect: GS101, GS503
        self.last_psnr = float(-10.0 * torch.log10(F.mse_loss(pred.detach(), frames)))  # expect: GS105
        if cfg.track_memory:
            free, total = torch.cuda.mem_get_info()  # expect: GS405
            self.metrics["mem_used"] = (total - free) / 2**20  # expect: GS503
        if cfg.image_dir is not None and self.global_step % cfg.image_every == 0:  # expect: GS301
            write_pgm(pred[0, -1, 0].detach(), os.path.join(cfg.image_dir, f"pred_{self.global_step:06d}.pgm"))
        self.rollouts += 1  # expect: GS302
        return loss, pred.detach()
