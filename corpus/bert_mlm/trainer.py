"""MLM pre-training loop: dynamic whole-word masking, accumulation, loss scaling, graphed step."""

from __future__ import annotations

import logging
import time
from collections import defaultdict

import torch
from torch.utils.data import DataLoader

from config import MLMConfig
from model import BertMLM, mlm_accuracy, mlm_loss
from schedule import DynamicLossScale, warmup_linear

logger = logging.getLogger("mlm")


def stack_rows(rows: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {k: torch.stack([r[k] for r in rows]) for k in rows[0]}


def build_loader(rows, cfg: MLMConfig, generator: torch.Generator) -> DataLoader:
    return DataLoader(rows, batch_size=cfg.batch_size, shuffle=True, drop_last=True,
                      collate_fn=stack_rows, pin_memory=True, generator=generator)


class MLMTrainer:
    def __init__(self, cfg: MLMConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = BertMLM(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.peak_lr, weight_decay=0.01)
        self.loss_scaler = DynamicLossScale(cfg.init_loss_scale, cfg.scale_window)
        self.loss_scale = cfg.init_loss_scale
        self.lr = 0.0
        self.micro_step = 0
        self.mask_gen = torch.Generator(device=self.device)
        self.mask_gen.manual_seed(cfg.seed)
        self.stats: dict[str, list] = defaultdict(list)
        shape = (cfg.batch_size, cfg.max_len)
        self.static_ids = torch.zeros(shape, dtype=torch.long, device=device)
        self.static_words = torch.zeros(shape, dtype=torch.long, device=device)
        self.static_segs = torch.zeros(shape, dtype=torch.long, device=device)
        self.static_loss = torch.zeros((), device=device)
        self.static_acc = torch.zeros((), device=device)
        self.static_overflow = torch.zeros((), dtype=torch.bool, device=device)
        self.graph = None

    def draw_masks(self, input_ids: torch.Tensor, word_ids: torch.Tensor):
        cfg = self.cfg
        special = torch.tensor(cfg.special_ids, device=input_ids.device)  # expect: GS402
        is_special = torch.isin(input_ids, special)
        word_noise = torch.rand(input_ids.shape[0], cfg.max_words, generator=self.mask_gen, device=input_ids.device)  # expect: GS601
        chosen = (word_noise.gather(1, word_ids) < cfg.mask_prob) & ~is_special
        labels = torch.where(chosen, input_ids, torch.full_like(input_ids, cfg.ignore_index))
        action = torch.rand(input_ids.shape, generator=self.mask_gen, device=input_ids.device)  # expect: GS601
        to_mask = chosen & (action < cfg.replace_prob)
        to_random = chosen & (action >= cfg.replace_prob) & (action < cfg.replace_prob + cfg.random_prob)
        random_ids = torch.randint_like(input_ids, 4, cfg.vocab_size)
        masked = torch.where(to_mask, torch.full_like(input_ids, cfg.mask_id), input_ids)
        masked = torch.where(to_random, random_ids, masked)
        return masked, labels

    def unscale_and_clip(self, scale: float) -> torch.Tensor:
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        torch._foreach_div_(grads, scale)  # expect: GS301
        return torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm, error_if_nonfinite=True)  # expect: GS110

    def train_step(self, input_ids, word_ids, segment_ids, lr: float):
        masked, labels = self.draw_masks(input_ids, word_ids)
        t0 = time.perf_counter()  # expect: GS502
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.use_amp):
            logits = self.model(masked, segment_ids)
            loss = mlm_loss(logits.float(), labels, self.cfg.ignore_index)
        if not torch.isfinite(loss):  # expect: GS201
            logger.warning("non-finite MLM loss at micro step %d", self.micro_step)  # expect: GS501
        (loss * self.loss_scale / self.cfg.accum_steps).backward()  # expect: GS301
        self.micro_step += 1  # expect: GS302
        if self.micro_step % self.cfg.accum_steps == 0:  # expect: GS301
            for group in self.opt.param_groups:
                group["lr"] = lr  # expect: GS301
            norm = self.unscale_and_clip(self.loss_scale)
            self.static_overflow.copy_(~torch.isfinite(norm))
            if self.cfg.skip_overflow_steps and not torch.isfinite(norm):  # expect: GS201
                self.opt.zero_grad(set_to_none=False)
            self.opt.step()  # expect: GS701
            self.opt.zero_grad(set_to_none=False)
            self.stats["grad_norm"].append(norm.item())  # expect: GS101, GS503
        n_masked = int((labels != self.cfg.ignore_index).sum())  # expect: GS105
        acc = mlm_accuracy(logits.detach(), labels, self.cfg.ignore_index)
        if n_masked == 0:  # expect: GS201
            acc = torch.zeros_like(acc)
        if self.cfg.track_memory and torch.cuda.is_available():
            self.stats["mem"].append(torch.cuda.memory_allocated() / 2**20)  # expect: GS405, GS503
        self.stats["step_time"].append(time.perf_counter() - t0)  # expect: GS502, GS503
        return loss.detach(), acc

    def capture(self) -> None:
        warm = torch.cuda.Stream()
        warm.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(warm):
            for _ in range(3):
                self.train_step(self.static_ids, self.static_words, self.static_segs, self.lr)
        torch.cuda.current_stream().wait_stream(warm)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=self.cfg.use_amp):  # expect: GS702
            with torch.cuda.graph(self.graph):  # expect: GS708
                loss, acc = self.train_step(self.static_ids, self.static_words, self.static_segs, self.lr)
                self.static_loss.copy_(loss)
                self.static_acc.copy_(acc)

    @torch.no_grad()
    def evaluate(self, rows: list[dict[str, torch.Tensor]]) -> float:
        self.model.eval()
        batch = stack_rows(rows)
        ids = batch["input_ids"].to(self.device)
        masked, labels = self.draw_masks(ids, batch["word_ids"].to(self.device))
        logits = self.model(masked, batch["segment_ids"].to(self.device))
        acc = mlm_accuracy(logits, labels, self.cfg.ignore_index).item()
        self.model.train()
        return acc

    def fit(self, rows, eval_rows, steps: int, history: list) -> dict[str, float]:
        loader = build_loader(rows, self.cfg, torch.Generator().manual_seed(self.cfg.seed))
        if self.device.type == "cuda":
            self.capture()
        evals = []
        it = 0
        while it < steps:
            for batch in loader:
                if it >= steps:
                    break
                self.lr = warmup_linear(it // self.cfg.accum_steps, self.cfg)
                self.static_ids.copy_(batch["input_ids"])
                self.static_segs.copy_(batch["segment_ids"])
                self.static_words = batch["word_ids"].to(self.device)  # expect: GS401
                if self.graph is not None:
                    self.graph.replay()
                else:
                    loss, acc = self.train_step(self.static_ids, self.static_words, self.static_segs, self.lr)
                    self.static_loss.copy_(loss)
                    self.static_acc.copy_(acc)
                history.append(self.static_loss)  # expect: GS407
                self.loss_scale = self.loss_scaler.update(bool(self.static_overflow))
                if self.cfg.eval_every and (it + 1) % self.cfg.eval_every == 0:
                    evals.append(self.evaluate(eval_rows))
                it += 1
        return {"eval_acc": evals[-1] if evals else 0.0, "train_acc": float(self.static_acc)}
