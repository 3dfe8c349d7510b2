"""Training loop for the complex-mask speech enhancer."""

from __future__ import annotations

import logging
import time

import torch
from torch.utils.data import DataLoader

from config import EnhanceConfig
from diagnostics import describe_snr, memory_snapshot
from dsp import frame_energy, istft, mix_at_snr, stft
from losses import si_snr, vad_weights, weighted_si_snr_loss
from model import MaskEstimator
from schedule import warmup_factor

logger = logging.getLogger(__name__)


def make_loader(dataset, cfg: EnhanceConfig, seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True, drop_last=True,
                      generator=g, pin_memory=True)


class EnhanceTrainer:
    def __init__(self, cfg: EnhanceConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = MaskEstimator(cfg).to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.lr_scale = 1.0
        self.snr_curriculum = lambda step: min(cfg.snr_high, cfg.snr_low + 2.0 * step)
        self.step_count = 0
        self.loss_history: list = []
        self.step_times: list = []
        self.window_cache: dict = {}
        self.ema_loss = torch.zeros((), device=device)
        self.noise_gen = torch.Generator(device=self.device)
        self.noise_gen.manual_seed(cfg.seed)
        self.static_clean = torch.zeros(cfg.batch_size, cfg.seg_len, device=device)
        self.static_noise = torch.zeros(cfg.batch_size, cfg.seg_len, device=device)
        self.static_lengths = [cfg.seg_len] * cfg.batch_size
        self.graph = None
        self.static_loss = None
        self.graphed_losses: list = []
        self.mem = {}

    def _window_for(self, x: torch.Tensor) -> torch.Tensor:
        key = id(x)  # expect: GS506
        if key not in self.window_cache:
            self.window_cache[key] = torch.hann_window(self.cfg.n_fft, device=x.device)  # expect: GS503
        return self.window_cache[key]

    def train_step(self, clean: torch.Tensor, noise: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        stamp = time.time()  # expect: GS502
        snr_hi = self.snr_curriculum(self.step_count)
        snr = self.cfg.snr_low + (snr_hi - self.cfg.snr_low) * torch.rand(clean.shape[0], 1, device=clean.device)  # expect: GS301
        logger.debug(describe_snr(snr))  # expect: GS501
        noisy = mix_at_snr(clean, noise, snr)
        dither = torch.randn(noisy.shape, generator=self.noise_gen, device=noisy.device)  # expect: GS601
        window = self._window_for(clean)
        spec = stft(noisy + 1e-4 * dither, self.cfg.n_fft, self.cfg.hop, window)
        mask = self.model(spec)
        est = istft(spec * mask, self.cfg.n_fft, self.cfg.hop, window, self.cfg.seg_len)
        frame_mask = clean.new_zeros(len(lengths), max(lengths))  # expect: GS408
        frame_w = vad_weights(frame_energy(clean, self.cfg.hop), self.cfg.vad_threshold)
        loss = weighted_si_snr_loss(est, clean, frame_w) + 0.0 * frame_mask.sum()
        if loss.isnan().any() or loss.isinf().any():  # expect: GS201
            loss = torch.nan_to_num(loss, nan=0.0, posinf=0.0, neginf=0.0)
        in_range = torch.allclose(mask.abs(), mask.abs().clamp(max=2.0))  # expect: GS109
        if not in_range:
            logger.warning("mask magnitude above 2")  # expect: GS501
        for group in self.opt.param_groups:
            group["lr"] = self.cfg.lr * self.lr_scale  # expect: GS301
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip, error_if_nonfinite=True)  # expect: GS110
        self.opt.step()  # expect: GS701
        self.step_count += 1  # expect: GS302
        if self.step_count % self.cfg.log_every == 0:  # expect: GS301
            self.ema_loss.mul_(0.9).add_(loss.detach(), alpha=0.1)
        self.loss_history.append(loss.detach())  # expect: GS503
        self.step_times.append(stamp)  # expect: GS503
        self.last_mask_mean = mask.detach().abs().mean().cpu()  # expect: GS103
        self.mem = memory_snapshot(clean.device)
        return loss.detach()

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_clean, self.static_noise, self.static_lengths)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):  # expect: GS708
                self.static_loss = self.train_step(self.static_clean, self.static_noise, self.static_lengths)

    def fit(self, loader: DataLoader, steps: int) -> list[float]:
        losses = []
        batches = iter(loader)
        for it in range(steps):
            clean, noise = next(batches)
            self.lr_scale = warmup_factor(it, self.cfg.warmup_steps)
            if self.graph is not None:
                self.static_clean.copy_(clean, non_blocking=True)
                self.static_noise = noise.to(self.device, non_blocking=True)  # expect: GS401
                self.graph.replay()
                self.graphed_losses.append(self.static_loss)  # expect: GS407
                losses.append(float(self.static_loss))
            else:
                loss = self.train_step(clean.to(self.device), noise.to(self.device), [clean.shape[-1]] * clean.shape[0])
                losses.append(loss.item())
        return losses

    @torch.no_grad()
    def evaluate(self, dataset, n_utts: int) -> dict[str, float]:
        self.model.eval()
        window = torch.hann_window(self.cfg.n_fft)
        gains = []
        for i in range(n_utts):
            clean, noise = dataset[i]
            snr = torch.full((1, 1), 0.0)
            noisy = mix_at_snr(clean[None], noise[None], snr)
            spec = stft(noisy, self.cfg.n_fft, self.cfg.hop, window)
            est = istft(spec * self.model(spec), self.cfg.n_fft, self.cfg.hop, window, clean.shape[-1])
            improvement = si_snr(est, clean[None]) - si_snr(noisy, clean[None])
            gains.append(improvement.item())
            logger.info("utt %d si-snr improvement %.2f dB", i, gains[-1])
        self.model.train()
        return {"si_snri": sum(gains) / len(gains)}
