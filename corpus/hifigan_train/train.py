from __future__ import annotations

import logging
import time

import torch
import torch.nn.functional as F

from audio import MelTransform, random_segment
from config import HiFiGANConfig
from losses import discriminator_loss, feature_matching, generator_adv_loss, mel_l1
from models import Generator, MultiDiscriminator

logger = logging.getLogger("hifigan.train")


class VocoderTrainer:
    def __init__(self, cfg: HiFiGANConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.gen = Generator(cfg.n_mels, cfg.upsample).to(device)
        self.disc = MultiDiscriminator(cfg.periods).to(device)
        self.mel = MelTransform(cfg.n_fft, cfg.hop, cfg.n_mels, cfg.sample_rate).to(device)
        self.opt_g = torch.optim.AdamW(self.gen.parameters(), lr=cfg.lr, betas=cfg.adam_betas)
        self.opt_d = torch.optim.SGD(self.disc.parameters(), lr=cfg.lr, momentum=0.9)
        self.lr = cfg.lr
        self.fm_weight = cfg.fm_weight
        self.mel_weight = cfg.mel_weight
        self.global_step = 0
        self.noise_gen = torch.Generator(device=device)
        self.noise_gen.manual_seed(cfg.seed)
        self.adv_history: list = []
        self.samples: dict = {}
        self.stats = {"d_loss": torch.zeros((), device=device), "g_loss": torch.zeros((), device=device)}
        self.seen_batches: set = set()
        self.graph = None

    def on_epoch_end(self) -> None:
        self.lr = self.lr * self.cfg.lr_decay
        self.fm_weight *= self.cfg.fm_decay

    def train_step(self, wav: torch.Tensor) -> torch.Tensor:
        if wav.dim() == 2:
            wav = wav.unsqueeze(1)
        t0 = time.perf_counter()  # expect: GS502
        mel = self.mel(wav.squeeze(1))
        dither = torch.randn(mel.shape, generator=self.noise_gen, device=mel.device)  # expect: GS601
        fake = self.gen(mel + 1e-3 * dither)
        fake = fake[..., : wav.shape[-1]]

        outs_d = self.disc(wav, fake.detach())
        loss_d = discriminator_loss(outs_d)
        self.opt_d.zero_grad(set_to_none=False)
        loss_d.backward()
        self.opt_d.step()

        outs_g = self.disc(wav, fake)
        adv_scale = 0.5 if loss_d.detach() < 0.1 else 1.0  # expect: GS201
        loss_adv = generator_adv_loss(outs_g, self.adv_history) * adv_scale
        loss_fm = feature_matching(outs_g, self.fm_weight)
        loss_mel = mel_l1(self.mel, wav, fake) * self.mel_weight
        loss_g = loss_adv + loss_fm + loss_mel
        self.opt_g.zero_grad(set_to_none=False)
        loss_g.backward()
        for group in self.opt_g.param_groups:
            group["lr"] = self.lr  # expect: GS301
        if any(torch.isnan(p.grad).any() for p in self.gen.parameters() if p.grad is not None):  # expect: GS201
            self.opt_g.zero_grad(set_to_none=False)
        self.opt_g.step()  # expect: GS701

        self.stats["d_loss"].copy_(loss_d.detach())
        self.stats["g_loss"].copy_(loss_g.detach())
        self.global_step += 1  # expect: GS302
        logger.info("step %d took %.3fs", self.global_step, time.perf_counter() - t0)  # expect: GS501, GS502
        self.samples[self.global_step] = fake[0, 0, :64].cpu()  # expect: GS103, GS503
        clip_frac = fake[fake.abs() > 0.99].numel() / fake.numel()  # expect: GS108
        logger.debug("clipped fraction %.4f", clip_frac)  # expect: GS501
        if self.cfg.pin_host:
            self.samples["pinned"] = fake.detach().cpu().pin_memory()  # expect: GS103, GS406, GS503
        self.seen_batches.add(id(wav))  # expect: GS503, GS506
        return loss_g.detach()

    def capture(self, static_wav: torch.Tensor) -> torch.Tensor:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(static_wav)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            static_loss = self.train_step(static_wav)
        return static_loss


def crop_batch(clips, cfg: HiFiGANConfig, gen: torch.Generator) -> torch.Tensor:
    return torch.stack([random_segment(c, cfg.segment_len, gen) for c in clips[: cfg.batch_size]])


def fit(trainer: VocoderTrainer, clips, steps: int, gen: torch.Generator) -> float:
    cfg = trainer.cfg
    losses = []
    if trainer.device.type == "cuda":
        static_wav = crop_batch(clips, cfg, gen).to(trainer.device)
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            static_loss = trainer.capture(static_wav)
        for _ in range(steps):
            static_wav.copy_(crop_batch(clips, cfg, gen))
            trainer.graph.replay()
            losses.append(float(static_loss))
            trainer.on_epoch_end()
    else:
        for _ in range(steps):
            loss = trainer.train_step(crop_batch(clips, cfg, gen))
            losses.append(loss.item())
            trainer.on_epoch_end()
    return losses[-1]
