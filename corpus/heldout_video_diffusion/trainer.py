"""Video diffusion training step: frame dropping, caption dropout, v-prediction, min-SNR weights."""

from __future__ import annotations

import copy
import logging
import random
import time

import torch
import torch.nn.functional as F

from embeddings import encode_captions
from model import VideoDenoiser
from preview import PreviewSampler
from schedule import cosine_alphas_cumprod, expand_like, min_snr_weight, v_target, warmup_lr

logger = logging.getLogger(__name__)


class VideoDiffusionTrainer:
    def __init__(self, cfg, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = VideoDenoiser(cfg).to(device)
        self.ema = copy.deepcopy(self.model).requires_grad_(False)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.01)
        ac = cosine_alphas_cumprod(cfg.timesteps).to(device)
        self.sqrt_ac = ac.sqrt()
        self.sqrt_1m_ac = (1.0 - ac).sqrt()
        self.snr = ac / (1.0 - ac)
        self.t_coverage = torch.zeros(cfg.timesteps, dtype=torch.long, device=device)
        self.noise_gen = torch.Generator(device=self.device)
        self.noise_gen.manual_seed(cfg.seed + 17)
        self.sampler = PreviewSampler(self.ema, self.sqrt_ac, self.sqrt_1m_ac, cfg)
        self.num_updates = 0
        self.stats: dict = {}
        self.loss_history: list = []
        self.replayed: list = []
        self.graph = None
        self.static_video = None
        self.static_captions = None
        self.static_loss = None

    @property
    def ema_decay(self) -> float:
        return min(self.cfg.ema_max, (1 + self.num_updates) / (10 + self.num_updates))

    def train_step(self, video: torch.Tensor, captions: list[torch.Tensor]) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        cfg = self.cfg
        b, f = video.shape[:2]
        text_ids = encode_captions(captions)
        keep = [random.random() >= cfg.frame_drop_prob for _ in range(f)]  # expect: GS502
        keep[0] = True
        frame_mask = torch.tensor(keep, device=video.device).expand(b, f)  # expect: GS402
        drop_text = torch.rand(b, device=video.device) < cfg.cond_drop_prob
        text_ids = torch.where(drop_text[:, None], torch.zeros_like(text_ids), text_ids)

        t = torch.randint(0, cfg.timesteps, (b,), device=video.device)
        noise = torch.randn(video.shape, generator=self.noise_gen, device=video.device)  # expect: GS601
        sa = expand_like(self.sqrt_ac[t], video)
        s1m = expand_like(self.sqrt_1m_ac[t], video)
        noisy = sa * video + s1m * noise

        for group in self.opt.param_groups:
            group["lr"] = warmup_lr(self.num_updates, cfg)  # expect: GS301
        self.opt.zero_grad(set_to_none=False)
        pred = self.model(noisy, t, text_ids, frame_mask)
        target = v_target(video, noise, sa, s1m)
        per_frame = F.mse_loss(pred, target, reduction="none").mean(dim=(2, 3, 4))
        mask_f = frame_mask.float()
        weights = min_snr_weight(self.snr[t], cfg.snr_gamma)
        diffusion_loss = ((per_frame * mask_f).sum(1) / mask_f.sum(1) * weights).mean()
        temporal_loss = (pred[:, 1:] - pred[:, :-1]).pow(2).mean()
        loss_weights = torch.tensor(cfg.loss_weights, device=video.device)  # expect: GS402
        loss = loss_weights[0] * diffusion_loss + loss_weights[1] * temporal_loss
        if not torch.isfinite(loss):  # expect: GS201
            logger.warning("non-finite loss at update %d", self.num_updates)  # expect: GS501
            return loss.detach()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip, error_if_nonfinite=True)  # expect: GS110
        self.opt.step()  # expect: GS701
        with torch.no_grad():
            for pe, p in zip(self.ema.parameters(), self.model.parameters()):
                pe.lerp_(p.detach(), 1.0 - self.ema_decay)  # expect: GS301
        self.num_updates += 1  # expect: GS302

        self.t_coverage.add_(torch.bincount(t, minlength=cfg.timesteps))  # expect: GS107
        snr_mean = self.snr[t].mean().item()  # expect: GS101
        self.stats["snr_mean"] = snr_mean  # expect: GS503
        if self.num_updates % cfg.preview_every == 0:  # expect: GS301
            self.sampler.preview(text_ids[:1], self.num_updates)
        if cfg.profile:
            torch.cuda.synchronize()  # expect: GS106
            peak = torch.cuda.max_memory_allocated()  # expect: GS405
            logger.debug("update %d: %.1f MiB, %.3fs", self.num_updates, peak / 2**20, time.perf_counter() - t0)  # expect: GS501, GS502
        self.loss_history.append(loss.detach())  # expect: GS503
        return loss.detach()

    def capture(self, video: torch.Tensor, captions: list[torch.Tensor]) -> None:
        self.static_video = video.clone()
        self.static_captions = [c.clone() for c in captions]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_video, self.static_captions)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_video, self.static_captions)

    def fit_batch(self, video: torch.Tensor, captions: list[torch.Tensor]) -> torch.Tensor:
        if self.graph is None:
            return self.train_step(video, captions)
        self.static_video = video  # expect: GS401
        for dst, src in zip(self.static_captions, captions):
            dst.copy_(src)
        self.graph.replay()
        self.replayed.append(self.static_loss)  # expect: GS407
        return self.static_loss
