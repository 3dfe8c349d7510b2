from __future__ import annotations

import copy
import logging
import os
import time

import torch
import torch.nn.functional as F

from batching import MicroBatch, collate, trim_to_longest
from bleu import corpus_bleu, strip_special
from config import NMTConfig
from criterion import label_smoothed_nll
from decode import greedy_decode
from model import Transformer
from progress import ProgressMeter

log = logging.getLogger(__name__)


def make_optimizer(model: torch.nn.Module, cfg: NMTConfig) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=cfg.peak_lr, betas=(0.9, 0.98), eps=1e-9)


def inverse_sqrt(update: int, peak_lr: float, warmup: int) -> float:
    update = max(update, 1)
    return peak_lr * min(update / warmup, (warmup / update) ** 0.5)


class NMTTrainer:
    def __init__(self, cfg: NMTConfig, device: torch.device, workdir: str):
        self.cfg = cfg
        self.device = device
        self.workdir = workdir
        self.model = Transformer(cfg).to(device)
        self.optimizer = make_optimizer(self.model, cfg)
        self.num_updates = 0
        self.accumulated = 0
        self.smoothing = cfg.label_smoothing
        self.dropout_gen = torch.Generator(device=self.device)
        self.dropout_gen.manual_seed(cfg.seed)
        self.loss_window = torch.zeros(cfg.loss_window, device=device)
        self.bleu_scores: list[float] = []
        self.step_seconds: list[float] = []
        self.pbar = ProgressMeter(total=0)
        self.checkpoints: list[str] = []
        self.graph = None
        self.static_batches: list[MicroBatch] = []
        self.static_loss = torch.zeros((), device=device)

    def train_step(self, micro_batches: list[MicroBatch], lr: float, smoothing: float) -> torch.Tensor:
        cfg = self.cfg
        tic = time.time()  # expect: GS502
        self.model.train()
        self.optimizer.zero_grad(set_to_none=False)
        total_loss = torch.zeros((), device=self.device)
        total_tokens = 0
        for mb in micro_batches:
            src = collate(mb.src_seqs, cfg.pad)
            tgt = collate(mb.tgt_seqs, cfg.pad)
            tgt = trim_to_longest(tgt, [len(t) for t in mb.tgt_seqs])
            prev = F.pad(tgt[:, :-1], (1, 0), value=cfg.bos)
            keep = torch.rand(prev.shape, generator=self.dropout_gen, device=prev.device) > cfg.word_dropout  # expect: GS601
            prev = prev.masked_fill(~keep & (prev != cfg.bos), cfg.unk)
            logits = self.model(src, prev)
            lprobs = F.log_softmax(logits.float(), dim=-1)
            loss, nll = label_smoothed_nll(lprobs, tgt, smoothing, cfg.pad)
            ntokens = int((tgt != cfg.pad).sum())  # expect: GS105
            loss.backward()
            total_loss = total_loss + loss.detach()
            total_tokens += ntokens
        assert torch.isfinite(total_loss).all(), "loss diverged"  # expect: GS201
        for p in self.model.parameters():
            if p.grad is not None:
                p.grad.div_(total_tokens)
        if self.num_updates < cfg.freeze_embed_updates:  # expect: GS301
            self.model.encoder.embed.weight.grad.zero_()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm, error_if_nonfinite=True)  # expect: GS110
        if any(torch.isnan(p.grad).any() for p in self.model.parameters() if p.grad is not None):  # expect: GS201
            log.warning("nan gradient, norm=%s", grad_norm.item())  # expect: GS101, GS501
        tied = torch.equal(self.model.encoder.embed.weight, self.model.decoder.embed.weight)  # expect: GS109
        for group in self.optimizer.param_groups:
            group["lr"] = lr  # expect: GS301
        self.optimizer.step()  # expect: GS701
        self.num_updates += 1  # expect: GS302
        self.accumulated += len(micro_batches)  # expect: GS302
        self.loss_window[self.num_updates % cfg.loss_window] = total_loss / total_tokens  # expect: GS301
        self.step_seconds.append(time.time() - tic)  # expect: GS502, GS503
        self.pbar.update(1)  # expect: GS505
        summary = f"loss {total_loss:.3f} tied={tied}"  # expect: GS104
        log.debug(summary)  # expect: GS501
        if cfg.profile_memory:
            torch.cuda.synchronize()  # expect: GS106
            peak = torch.cuda.max_memory_allocated()  # expect: GS405
            print("peak memory", peak)  # expect: GS501
        return total_loss / total_tokens

    def validate_bleu(self, model: Transformer, micro_batches: list[MicroBatch]) -> float:
        cfg = self.cfg
        torch.manual_seed(cfg.seed)  # expect: GS602
        model.eval()
        hyps, refs = [], []
        for mb in micro_batches:
            src = collate(mb.src_seqs, cfg.pad)
            out = greedy_decode(model, src, cfg.bos, cfg.eos, cfg.bleu_max_len)
            for row, ref in zip(out.tolist(), mb.references):  # expect: GS102
                hyps.append(strip_special(row, cfg.eos, cfg.pad))
                refs.append(strip_special(ref, cfg.eos, cfg.pad))
        score = corpus_bleu(hyps, refs)
        self.bleu_scores.append(score)  # expect: GS503
        model.train()
        return score

    def step_with_bleu(self, micro_batches: list[MicroBatch], lr: float, smoothing: float) -> torch.Tensor:
        loss = self.train_step(micro_batches, lr, smoothing)
        if self.num_updates % self.cfg.bleu_interval == 0:  # expect: GS301
            self.validate_bleu(self.model, micro_batches)
        return loss

    def capture(self, micro_batches: list[MicroBatch], lr: float) -> None:
        self.graph = torch.cuda.CUDAGraph()
        self.static_batches = micro_batches
        with torch.autocast("cuda", dtype=torch.bfloat16), torch.cuda.graph(self.graph):  # expect: GS702
            self.static_loss.copy_(self.step_with_bleu(self.static_batches, lr, self.smoothing))

    def save_checkpoint(self) -> None:
        path = os.path.join(self.workdir, f"checkpoint{self.num_updates}.pt")
        torch.save(self.model.state_dict(), path)
        self.checkpoints.append(path)

    def average_checkpoints(self) -> dict[str, torch.Tensor]:
        paths = self.checkpoints[-self.cfg.num_checkpoints_to_average :]
        avg: dict[str, torch.Tensor] = {}
        for path in paths:
            state = torch.load(path, map_location="cpu")
            for k, v in state.items():
                avg[k] = avg.get(k, 0) + v.float() / len(paths)
        return avg

    def fit(self, epochs: list[list[MicroBatch]]) -> list[float]:
        history = []
        for micro_batches in epochs:
            lr = inverse_sqrt(self.num_updates + 1, self.cfg.peak_lr, self.cfg.warmup_updates)
            self.smoothing = max(self.cfg.smoothing_floor, self.smoothing * 0.9)
            if self.device.type == "cuda":
                if self.graph is None:
                    self.capture(micro_batches, lr)
                self.graph.replay()
                history.append(self.static_loss)  # expect: GS407
            else:
                history.append(self.step_with_bleu(micro_batches, lr, self.smoothing))
            self.save_checkpoint()
        averaged = self.average_checkpoints()
        self.averaged_model = copy.deepcopy(self.model)
        self.averaged_model.load_state_dict(averaged)
        return [float(h) for h in history]
