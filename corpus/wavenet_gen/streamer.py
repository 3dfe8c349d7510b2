"""Streaming synthesis: one audio sample per call, layer queues carried between calls."""

from __future__ import annotations

import logging
import random
from collections import defaultdict

import torch
import torch.nn.functional as F

from config import StreamConfig
from layers import make_queue
from model import WaveNet
from mulaw import mu_law_decode

logger = logging.getLogger("wavenet.stream")


class WaveNetStreamer:
    def __init__(self, model: WaveNet, cfg: StreamConfig, device: torch.device):
        self.model = model.eval()
        self.cfg = cfg
        self.device = device
        mcfg = model.cfg
        self.queues = [make_queue(cfg.batch, mcfg.residual_channels, d, device) for d in mcfg.dilations]
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(cfg.seed)
        self.cond = torch.zeros(cfg.batch, mcfg.cond_channels, 1, device=device)
        self.t = 0
        self.samples_out = 0
        self.out_chunks: list[torch.Tensor] = []
        self.levels: dict[str, list] = defaultdict(list)
        self.latency_ms: list[float] = []
        self.static_prev = torch.full((cfg.batch,), mcfg.quantization_channels // 2, dtype=torch.long, device=device)
        self.static_out: torch.Tensor | None = None
        self.graph: torch.cuda.CUDAGraph | None = None
        if cfg.profile:
            self.start_evt = torch.cuda.Event(enable_timing=True)
            self.end_evt = torch.cuda.Event(enable_timing=True)

    def set_conditioning(self, mel: torch.Tensor) -> None:
        frames = mel.shape[-1]
        self.cond = F.interpolate(mel, size=frames * self.model.cfg.hop, mode="nearest").to(self.device)  # expect: GS401

    def reset(self) -> None:
        for q in self.queues:
            q.reset()
        self.t = 0
        self.static_prev.fill_(self.model.cfg.quantization_channels // 2)

    @torch.no_grad()
    def step(self, prev: torch.Tensor, temperature: float) -> torch.Tensor:
        if self.cfg.profile:
            self.start_evt.record()
        x = self.model.embed(prev)
        frame = self.cond[:, :, self.t // self.model.cfg.hop]  # expect: GS301
        skips = torch.zeros(prev.shape[0], self.model.cfg.skip_channels, device=prev.device)
        for layer, queue in zip(self.model.layers, self.queues):
            past = queue.push_pop(x)
            x, s = layer.incremental(x, past, frame)
            skips = skips + s
        logits = self.model.head(skips)
        if self.cfg.reseed_each_step:
            self.gen.manual_seed(self.cfg.seed)  # expect: GS602
        probs = torch.softmax(logits / temperature, dim=-1)  # a per-run setting (run.py passes the config value): not per-step
        idx = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)
        dist = torch.distributions.Categorical(probs=probs)  # expect: GS111
        self.levels["entropy"].append(dist.entropy().mean())  # expect: GS503
        dither = random.gauss(0.0, self.cfg.dither)  # expect: GS502
        audio = mu_law_decode(idx, self.model.cfg.quantization_channels) + dither  # expect: GS301 (a host draw's number, frozen where it enters device work)
        if (audio.abs() > 1.0).any():  # expect: GS201
            logger.warning("stream clipped at t=%d", self.t)  # expect: GS501
        audio = audio.clamp(-1.0, 1.0)
        voiced = audio[audio.abs() > self.cfg.silence_threshold]  # expect: GS108
        self.levels["rms"].append(voiced.pow(2).mean().sqrt())  # expect: GS503
        self.out_chunks.append(audio.cpu())  # expect: GS103, GS503
        if self.cfg.pinned_output:
            host = torch.empty(audio.shape, dtype=audio.dtype, pin_memory=True)  # expect: GS406
            host.copy_(audio, non_blocking=True)
        if self.cfg.profile:
            self.end_evt.record()
            self.latency_ms.append(self.start_evt.elapsed_time(self.end_evt))  # expect: GS106, GS503
        if self.cfg.snapshot_path:
            torch.save({"queues": [q.buf for q in self.queues], "t": self.t}, self.cfg.snapshot_path)  # expect: GS504
        self.t += 1  # expect: GS302
        self.samples_out += audio.shape[0]  # expect: GS302
        return idx

    def capture(self, temperature: float) -> None:
        self.graph = torch.cuda.CUDAGraph()
        self.graph.register_generator_state(self.gen)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.step(self.static_prev, temperature)
        torch.cuda.current_stream().wait_stream(side)
        self.reset()
        self.graph.capture_begin(capture_error_mode="thread_local")
        self.static_out = self.step(self.static_prev, temperature)
        self.graph.capture_end()

    def synthesize(self, mel: torch.Tensor, n_samples: int, temperature: float) -> torch.Tensor:
        self.set_conditioning(mel)
        self.reset()
        outputs = []
        if self.device.type == "cuda":
            if self.graph is None:
                self.capture(temperature)
                self.reset()
            for _ in range(n_samples):
                self.graph.replay()
                outputs.append(self.static_out.clone())
                self.static_prev.copy_(self.static_out)
        else:
            prev = self.static_prev
            for _ in range(n_samples):
                prev = self.step(prev, temperature)
                outputs.append(prev)
        return torch.stack(outputs, dim=1)
