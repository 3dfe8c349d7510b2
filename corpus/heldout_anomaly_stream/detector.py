"""Streaming detector: normalise, reconstruct, score, threshold, count alarms, watch for drift.

`process` handles one batch of readings; on a GPU it is captured once and replayed per batch.
"""

from __future__ import annotations

import time

import torch
from torch.utils.data import DataLoader, Dataset

from alerts import AlertLog
from autoencoder import SensorAutoencoder
from config import StreamConfig
from drift import DriftDetector
from normalizer import SensorNormalizer
from threshold import RunningQuantile


class StreamDetector:
    def __init__(self, cfg: StreamConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        n = cfg.model.n_sensors
        self.ae = SensorAutoencoder(cfg.model).to(device)
        self.norm = SensorNormalizer(n, cfg.norm_momentum, cfg.max_abs).to(device)
        self.quantile = RunningQuantile(cfg.threshold, cfg.batch_size * n, device)
        self.drift = DriftDetector(cfg.drift, n, device)
        self.alerts = AlertLog(n, device, cfg.alert_path)
        self.opt = torch.optim.SGD(self.ae.parameters(), lr=cfg.lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.steps_seen = 0
        self.latent_norms: list = []
        self.graph = None
        self.static_x = torch.zeros(cfg.batch_size, n, device=device)
        self.static_scores = torch.zeros(cfg.batch_size, n, device=device)

    def make_loader(self, stream: Dataset) -> DataLoader:
        return DataLoader(stream, batch_size=self.cfg.batch_size, shuffle=False, drop_last=True, pin_memory=True)

    def _track_latent(self, module, inputs, output) -> None:
        self.latent_norms.append(output.detach().norm(dim=-1).mean())

    def process(self, x: torch.Tensor) -> torch.Tensor:
        t_start = time.monotonic()  # expect: GS502
        self.steps_seen += 1  # expect: GS302
        z = self.norm(x)
        self.opt.zero_grad(set_to_none=False)
        recon = self.ae(z)
        err = (recon - z).pow(2)
        self.scaler.scale(err.mean()).backward()
        self.scaler.step(self.opt)  # expect: GS703
        self.scaler.update()
        scores = err.detach()
        if self.steps_seen <= self.cfg.warmup_steps:  # expect: GS301
            return scores
        threshold = self.quantile.update(scores)
        alarm = scores > threshold
        self.alerts.record(self.steps_seen, scores, alarm)
        self.drift.check(z.detach().mean(0), self.norm, self.quantile)
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106
            print("step", self.steps_seen, "took", time.monotonic() - t_start)  # expect: GS501, GS502
        return scores

    def graph_encoder(self) -> None:
        encoder = self.ae.encoder
        encoder.register_forward_hook(self._track_latent)  # expect: GS706
        sample = torch.zeros(self.cfg.batch_size, self.cfg.model.n_sensors, device=self.device, requires_grad=True)
        self.ae.encoder = torch.cuda.make_graphed_callables(encoder, (sample,))

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.cfg.warmup_iters):
                self.process(self.static_x)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_scores = self.process(self.static_x)

    def feed(self, x: torch.Tensor) -> torch.Tensor:
        if self.graph is None:
            scores = self.process(x.to(self.device))
        else:
            self.static_x.copy_(x, non_blocking=True)
            self.graph.replay()
            scores = self.static_scores.clone()
        self.quantile.anneal(self.cfg.threshold.anneal)
        return scores
