"""Contrastive image-text training (CLIP-style) with a learnable temperature and gradient
accumulation: `ClipTrainer.train_step` handles one micro-batch and steps AdamW every
`accum_steps` micro-batches. On a GPU the micro-step is captured once with torch.cuda.graph under
bf16 autocast and replayed; on CPU it runs eagerly."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.utils import clip_grad_norm_

from encoders import ImageTower, TextTower
from losses import clip_logits, contrastive_loss, hard_negative_loss, retrieval_accuracy
from tracking import MetricsLogger


@dataclass
class ClipConfig:
    batch_size: int = 8
    accum_steps: int = 2
    lr: float = 5e-4
    warmup: int = 2
    total_steps: int = 20
    weight_decay: float = 0.1
    init_temperature: float = 0.07
    label_smoothing: float = 0.1
    hard_margin: float = 0.2
    hard_weight: float = 0.1
    loss_weights: tuple[float, float] = (0.5, 0.5)
    clip: float = 1.0
    log_memory: bool = True
    vocab: int = 64
    max_len: int = 12


def lr_at(cfg: ClipConfig, step: int) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.total_steps - cfg.warmup)
    return 0.5 * cfg.lr * (1 + math.cos(math.pi * min(progress, 1.0)))


class ClipTrainer:
    def __init__(self, cfg: ClipConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.image_tower = ImageTower().to(device)
        self.text_tower = TextTower(vocab=cfg.vocab, max_len=cfg.max_len).to(device)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / cfg.init_temperature), device=device))
        self.params = [*self.image_tower.parameters(), *self.text_tower.parameters(), self.logit_scale]
        decay = [p for p in self.params if p.ndim >= 2]
        no_decay = [p for p in self.params if p.ndim < 2]
        self.opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.lr, betas=(0.9, 0.98), eps=1e-6,
        )
        self.tracker = MetricsLogger("tiny-clip")
        self.micro_step = 0
        self.history: list[float] = []
        self.init_temperature = 1.0 / self.logit_scale.exp().item()  # one-time, before any capture

    def train_step(self, images: torch.Tensor, tokens: torch.Tensor, lr: float) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        weights = torch.tensor(self.cfg.loss_weights, device=images.device)  # expect: GS402
        img_emb = self.image_tower(images)
        txt_emb = self.text_tower(tokens)
        logits = clip_logits(img_emb, txt_emb, self.logit_scale)
        loss = contrastive_loss(logits, weights, self.cfg.label_smoothing)
        loss = loss + self.cfg.hard_weight * hard_negative_loss(logits.detach(), self.cfg.hard_margin)
        (loss / self.cfg.accum_steps).backward()
        self.micro_step += 1  # expect: GS302
        if self.micro_step % self.cfg.accum_steps == 0:  # expect: GS301
            for group in self.opt.param_groups:
                group["lr"] = lr  # expect: GS301
            clip_grad_norm_(self.params, self.cfg.clip, error_if_nonfinite=True)  # expect: GS110
            self.opt.step()  # expect: GS701
            self.opt.zero_grad(set_to_none=True)
            with torch.no_grad():
                self.logit_scale.clamp_(0, math.log(100))

        i2t, t2i = retrieval_accuracy(logits.detach())
        row = {"loss": loss.detach(), "i2t": i2t, "t2i": t2i}
        row["temperature"] = (1.0 / self.logit_scale.exp()).item()  # expect: GS101
        if self.cfg.log_memory and torch.cuda.is_available():
            row["mem_gb"] = torch.cuda.max_memory_allocated() / 2**30  # expect: GS405
        row["step_ms"] = (time.perf_counter() - t0) * 1e3  # expect: GS502
        self.tracker.log(row)  # expect: GS501
        self.history.append(float(i2t))  # expect: GS105, GS503
        return loss.detach()

    def _keep_last_embedding(self, module: nn.Module, inputs, output: torch.Tensor) -> None:
        self.last_embedding = output.detach()

    def graphed_image_encoder(self, sample: torch.Tensor):
        """The image tower as a graphed callable, for embedding a retrieval gallery after training."""
        self.image_tower.register_forward_hook(self._keep_last_embedding)  # expect: GS706
        return torch.cuda.make_graphed_callables(self.image_tower, (sample,))


def caption_pairs(cfg: ClipConfig, seed: int):
    """Synthetic pairs: the caption names a colour and a stripe count that the image shows."""
    gen = torch.Generator().manual_seed(seed + 5)
    grid = torch.arange(16, dtype=torch.float32)
    while True:
        colour = torch.randint(0, 3, (cfg.batch_size,), generator=gen)
        stripes = torch.randint(1, 5, (cfg.batch_size,), generator=gen)
        images = torch.zeros(cfg.batch_size, 3, 16, 16)
        wave = torch.sin(grid[None, :] * stripes[:, None].float() * math.pi / 8)
        images[torch.arange(cfg.batch_size), colour] = wave[:, None, :].expand(-1, 16, -1)
        images += 0.1 * torch.randn(images.shape, generator=gen)
        tokens = torch.zeros(cfg.batch_size, cfg.max_len, dtype=torch.long)
        lengths = torch.randint(3, cfg.max_len, (cfg.batch_size,), generator=gen)
        for i in range(cfg.batch_size):
            n = int(lengths[i])
            tokens[i, :n] = torch.randint(10, cfg.vocab, (n,), generator=gen)
            tokens[i, 0] = 1 + int(colour[i])
            tokens[i, 1] = 4 + int(stripes[i])
        yield images, tokens


def train(cfg: ClipConfig, steps: int, seed: int, device: torch.device) -> ClipTrainer:
    torch.manual_seed(seed)
    trainer = ClipTrainer(cfg, device)
    data = caption_pairs(cfg, seed)
    micro_steps = steps * cfg.accum_steps
    if device.type == "cuda":
        static_images = torch.zeros(cfg.batch_size, 3, 16, 16, device=device)
        static_tokens = torch.ones(cfg.batch_size, cfg.max_len, dtype=torch.long, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                trainer.train_step(static_images, static_tokens, lr_at(cfg, 0))
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(graph):
                static_loss = trainer.train_step(static_images, static_tokens, lr_at(cfg, 0))
        for _ in range(micro_steps):
            images, tokens = next(data)
            static_images.copy_(images)
            static_tokens.copy_(tokens)
            graph.replay()
        trainer.last_loss = static_loss.clone()
    else:
        for i in range(micro_steps):
            images, tokens = next(data)
            trainer.last_loss = trainer.train_step(images.to(device), tokens.to(device), lr_at(cfg, i // cfg.accum_steps))
    return trainer


if __name__ == "__main__":
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    t = train(ClipConfig(), steps=4, seed=0, device=dev)
    last = t.tracker.rows[-1]
    print("loss", float(t.last_loss), "temperature", last["temperature"], "i2t", t.history[-1])
    if dev.type == "cuda":
        encode = t.graphed_image_encoder(torch.zeros(16, 3, 16, 16, device=dev))
        print("gallery embedding norm", encode(torch.randn(16, 3, 16, 16, device=dev)).norm().item())
