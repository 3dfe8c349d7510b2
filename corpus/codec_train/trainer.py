import json
import logging
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from balancer import LossBalancer
from discriminator import MultiScaleSTFTDiscriminator, feature_matching, hinge_generator_loss
from metrics import bitrate_kbps, code_histogram, multi_scale_stft_loss
from quantizer import ResidualVQ, codebook_perplexity

logger = logging.getLogger(__name__)


class Encoder(nn.Module):
    def __init__(self, dim: int, hop: int):
        super().__init__()
        self.conv = nn.Conv1d(1, dim, hop * 2, stride=hop, padding=hop // 2)
        self.proj = nn.Conv1d(dim, dim, 3, padding=1)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        return self.proj(F.elu(self.conv(wav.unsqueeze(1)))).transpose(1, 2)


class Decoder(nn.Module):
    def __init__(self, dim: int, hop: int):
        super().__init__()
        self.proj = nn.Conv1d(dim, dim, 3, padding=1)
        self.up = nn.ConvTranspose1d(dim, 1, hop * 2, stride=hop, padding=hop // 2)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.up(F.elu(self.proj(q.transpose(1, 2))))).squeeze(1)


class CodecTrainer:
    def __init__(self, cfg, device, out_dir: str):
        self.cfg = cfg
        self.device = device
        self.out_dir = out_dir
        self.encoder = Encoder(cfg.latent_dim, cfg.hop).to(device)
        self.decoder = Decoder(cfg.latent_dim, cfg.hop).to(device)
        self.rvq = ResidualVQ(cfg.latent_dim, cfg.n_quantizers, cfg.codebook_size, cfg.quantizer_dropout).to(device)
        self.disc = MultiScaleSTFTDiscriminator(cfg.stft_scales).to(device)
        self.gen_params = [*self.encoder.parameters(), *self.decoder.parameters(), *self.rvq.parameters()]
        self.opt_g = torch.optim.Adam(self.gen_params, lr=cfg.lr, betas=(0.5, 0.9))
        self.opt_d = torch.optim.SGD(self.disc.parameters(), lr=cfg.disc_lr, momentum=0.9)
        self.balancer = LossBalancer(cfg.balancer_weights, cfg.balancer_ema, device)
        self.latent_gen = torch.Generator(device=device)
        self.latent_gen.manual_seed(cfg.seed)
        self.latent_noise = 0.05
        self.steps_done = 0
        self.bitrate_trace = torch.zeros(0, device=device)
        self.max_kbps = bitrate_kbps(cfg.n_quantizers, cfg.codebook_size, cfg.sample_rate, cfg.hop)
        self.graph = None
        self.static_wav = torch.zeros(cfg.batch_size, cfg.frame * cfg.hop, device=device)
        self.static_weight = torch.zeros((), device=device)
        self.static_loss = torch.zeros((), device=device)

    def train_step(self, wav: torch.Tensor, adv_weight: float) -> torch.Tensor:
        if wav.dim() == 3:
            wav = wav.squeeze(1)
        t0 = time.perf_counter()  # expect: GS502
        z = self.encoder(wav)
        z = z + self.latent_noise * torch.randn(z.shape, generator=self.latent_gen, device=z.device)  # expect: GS301, GS601
        q, codes, commit, n_active = self.rvq(z)
        recon = checkpoint(self.decoder, q, use_reentrant=False)  # expect: GS603

        self.opt_d.zero_grad(set_to_none=False)
        d_real = self.disc(wav)
        d_fake = self.disc(recon.detach())
        d_loss = sum(F.relu(1 - r).mean() + F.relu(1 + f).mean() for (r, _), (f, _) in zip(d_real, d_fake))
        d_loss.backward()
        self.opt_d.step()

        fake = self.disc(recon)
        losses = {"rec": multi_scale_stft_loss(wav, recon, self.cfg.stft_scales) + F.l1_loss(recon, wav)}
        losses["adv"] = adv_weight * hinge_generator_loss([logit for logit, _ in fake])  # expect: GS301
        if self.cfg.use_feature_matching:
            losses["fm"] = feature_matching([f for _, f in d_real], [f for _, f in fake])
        total = self.balancer.balance(losses, recon) + self.cfg.commit_weight * commit
        if not torch.isfinite(total):  # expect: GS201
            logger.warning("non-finite generator loss at step %d", self.steps_done)  # expect: GS501
        self.opt_g.zero_grad(set_to_none=False)
        total.backward()
        if any(torch.isnan(p.grad).any() for p in self.gen_params if p.grad is not None):  # expect: GS201
            self.opt_g.zero_grad(set_to_none=False)
        torch.nn.utils.clip_grad_norm_(self.gen_params, 1.0, error_if_nonfinite=True)  # expect: GS110
        self.opt_g.step()  # expect: GS701

        kbps = code_histogram(codes, self.cfg.codebook_size).gt(0).float().mean() * self.max_kbps
        self.bitrate_trace = torch.cat([self.bitrate_trace, kbps.view(1)])  # expect: GS404
        used = torch.unique(codes[:, 0])  # expect: GS107
        self.used_codes = used
        ppl = codebook_perplexity(codes[:, 0], self.cfg.codebook_size)
        quiet = recon.abs() < 1e-3
        self.quiet_energy = wav[quiet].pow(2).mean()  # expect: GS108
        self.last_frames = codes[0, 0, :8].tolist()  # expect: GS102
        self.converged = torch.allclose(recon, wav, atol=1e-3)  # expect: GS109
        self.usage_hist = self.rvq.layers[0].usage.cpu()  # expect: GS103
        summary = f"ppl={ppl:.2f} kbps={kbps:.2f}"  # expect: GS104
        self.steps_done += 1  # expect: GS302
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # expect: GS106
            logger.debug("peak %d", torch.cuda.max_memory_allocated())  # expect: GS501, GS405
        if self.cfg.dump_stats:
            with open(os.path.join(self.out_dir, "stats.jsonl"), "a") as fh:  # expect: GS504
                json.dump({"summary": summary, "active": n_active, "sec": time.perf_counter() - t0}, fh)  # expect: GS504, GS502
        return total.detach()

    def capture(self):
        self.graph = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(11):
                self.train_step(self.static_wav, 1.0)
        torch.cuda.current_stream().wait_stream(s)
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_wav, 1.0)

    def fit(self, batches, warmup: int) -> list:
        history = []
        for i, wav in enumerate(batches):
            adv_weight = min(1.0, i / max(1, warmup))
            self.latent_noise = 0.05 * (1.0 - i / len(batches))
            if self.graph is not None:
                self.static_wav = wav.to(self.device)  # expect: GS401
                self.graph.replay()
                history.append(self.static_loss)  # expect: GS407
            else:
                loss = self.train_step(wav.to(self.device), adv_weight)
                history.append(loss.clone())
        return history
