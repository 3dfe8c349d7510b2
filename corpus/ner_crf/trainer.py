"""Training loop with a compiled (CUDA-graphed) step, span F1 and early stopping."""

from __future__ import annotations

import copy
import logging
import time

import torch

from config import NERConfig
from losses import label_smoothed_ce
from metrics import SpanF1
from model import NERTagger

logger = logging.getLogger("ner.train")


class NERTrainer:
    def __init__(self, cfg: NERConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = NERTagger(cfg, device).to(device)
        self.encoder_opt = torch.optim.SGD(self.model.encoder_parameters(), lr=cfg.encoder_lr, momentum=0.9)
        self.crf_opt = torch.optim.Adam(self.model.crf.parameters(), lr=cfg.crf_lr)
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.amp and device.type == "cuda")
        self.span_f1 = SpanF1(cfg.labels)
        self.crf_lr = cfg.crf_lr
        self.token_loss_weight = cfg.token_loss_weight
        self.train_losses: list[torch.Tensor] = []
        self.status = ""
        self.best_f1 = -1.0
        self.bad_epochs = 0
        self.best_state: dict | None = None
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")
        else:
            self.step_fn = self.train_step

    def train_step(self, words: torch.Tensor, chars: torch.Tensor, tags: torch.Tensor, lengths: list[int]) -> torch.Tensor:
        started = time.monotonic()  # expect: GS502
        max_len = max(lengths)
        words, tags = (t[:, :max_len] for t in (words, tags))  # expect: GS408
        lengths_t = torch.as_tensor(lengths, device=words.device)  # expect: GS402
        positions = torch.arange(max_len, device=words.device)  # expect: GS408
        mask = positions[None, :] < lengths_t[:, None]
        if (lengths_t == 0).any():  # expect: GS201
            raise ValueError("empty sentence in batch")
        logger.debug("batch of %d sentences, longest %d tokens", len(lengths), max_len)  # expect: GS501

        self.model.train()
        emissions = self.model(words, chars[:, : words.size(1)], mask)
        crf_nll = self.model.crf(emissions, tags, mask)
        token_ce = label_smoothed_ce(emissions, tags, mask, self.cfg.label_smoothing)
        loss = crf_nll + self.token_loss_weight * token_ce  # expect: GS301
        if torch.isnan(loss):  # expect: GS201
            raise FloatingPointError("NaN loss")
        self.status = f"crf_nll={crf_nll:.3f}"  # expect: GS104

        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.encoder_opt)
        torch.nn.utils.clip_grad_norm_(self.model.encoder_parameters(), self.cfg.max_grad_norm, error_if_nonfinite=True)  # expect: GS110
        for group in self.crf_opt.param_groups:
            group["lr"] = self.crf_lr  # expect: GS301
        self.scaler.step(self.encoder_opt)  # expect: GS703
        self.scaler.update()
        self.crf_opt.step()  # expect: GS701
        self.encoder_opt.zero_grad(set_to_none=False)
        self.crf_opt.zero_grad(set_to_none=False)

        with torch.no_grad():
            paths = self.model.crf.viterbi_decode(emissions.detach(), mask)
        self.span_f1.update(paths, tags)
        self.train_losses.append(loss.detach())  # expect: GS503
        if self.cfg.metrics_path:
            with open(self.cfg.metrics_path, "a") as fh:  # expect: GS504
                fh.write(self.status + "\n")
        logger.debug("step took %.4fs", time.monotonic() - started)  # expect: GS501, GS502
        return loss.detach()

    @torch.no_grad()
    def evaluate(self, batches) -> float:
        self.model.eval()
        metric = SpanF1(self.cfg.labels)
        for words, chars, tags, lengths in batches:
            mask = torch.arange(words.size(1))[None, :] < torch.tensor(lengths)[:, None]
            emissions = self.model(words.to(self.device), chars.to(self.device), mask.to(self.device))
            metric.update(self.model.crf.viterbi_decode(emissions, mask.to(self.device)), tags)
        self.model.train()
        return metric.f1

    def end_epoch(self, epoch: int, val_f1: float) -> bool:
        """Early stopping on validation span F1; returns True when training should stop."""
        self.token_loss_weight = self.cfg.token_loss_weight * max(0.0, 1.0 - (epoch + 1) / self.cfg.epochs)
        if val_f1 > self.best_f1 + self.cfg.min_delta:
            self.best_f1 = val_f1
            self.bad_epochs = 0
            self.best_state = copy.deepcopy(self.model.state_dict())
            return False
        self.bad_epochs += 1
        self.crf_lr *= self.cfg.lr_decay
        logger.info("no improvement for %d epochs (best F1 %.4f)", self.bad_epochs, self.best_f1)
        return self.bad_epochs >= self.cfg.patience
