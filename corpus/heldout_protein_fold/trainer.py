"""Training loop for the structure model; the whole step is captured as one CUDA graph on a GPU."""

from __future__ import annotations

import copy
import logging
import os
import time

import torch

from config import TrainConfig
from data import ProteinBatch
from losses import distogram_loss, fape_loss, plddt_loss, violation_loss
from metrics import ConfidenceMonitor
from model import FoldModel
from schedule import WarmupCosine

logger = logging.getLogger("fold.train")


class FoldTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = FoldModel(cfg.model, device).to(device)
        self.ema_model = copy.deepcopy(self.model).requires_grad_(False)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.sched = WarmupCosine(cfg.lr, cfg.warmup_steps, cfg.total_steps)
        self.monitor = ConfidenceMonitor(cfg.low_conf)
        self.step_count = 0
        self.loss_history: list = []
        self.graph = None
        m = cfg.model
        self.static_msa = torch.zeros(m.batch_size, m.n_seq, m.n_res, dtype=torch.long, device=device)
        self.static_aatype = torch.zeros(m.batch_size, m.n_res, dtype=torch.long, device=device)
        self.static_coords = torch.zeros(m.batch_size, m.n_res, 3, device=device)
        self.static_mask = torch.ones(m.batch_size, m.n_res, device=device)

    @property
    def ema_decay(self) -> float:
        return min(self.cfg.ema_max, (1 + self.step_count) / (10 + self.step_count))

    def train_step(self, msa: torch.Tensor, aatype: torch.Tensor, coords: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        t0 = time.perf_counter()  # expect: GS502
        self.step_count += 1  # expect: GS302
        lr = self.sched.lr_at(self.step_count)
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        self.opt.zero_grad(set_to_none=False)
        out = self.model(msa, aatype, mask)
        lc = self.cfg.loss
        loss = distogram_loss(out.distogram, coords, mask, lc)
        loss = loss + lc.fape_weight * fape_loss(out.coords, coords, mask, lc.fape_clamp)
        _, weight = self.monitor.observe(out.plddt_logits)
        loss = loss + weight * lc.plddt_weight * plddt_loss(out.plddt_logits, out.coords.detach(), coords)
        if self.step_count % lc.violation_every == 0:  # expect: GS301
            loss = loss + lc.violation_weight * violation_loss(out.coords)
        if torch.isnan(loss).any():  # expect: GS201
            raise FloatingPointError("NaN loss in structure step")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm, error_if_nonfinite=True)  # expect: GS110
        self.opt.step()  # expect: GS701
        d = self.ema_decay
        with torch.no_grad():
            for p_ema, p in zip(self.ema_model.parameters(), self.model.parameters()):
                p_ema.lerp_(p, 1.0 - d)  # expect: GS301
        if self.cfg.track_memory:
            peak_mb = torch.cuda.max_memory_allocated() / 2**20  # expect: GS405
            logger.debug("peak %.0f MiB after %.3fs", peak_mb, time.perf_counter() - t0)  # expect: GS501, GS502
        if self.cfg.dump_dir:
            torch.save({"coords": out.coords.detach()}, os.path.join(self.cfg.dump_dir, "last_pred.pt"))  # expect: GS504
        return loss.detach()

    def load(self, batch: ProteinBatch) -> None:
        self.static_msa.copy_(batch.msa)
        self.static_coords.copy_(batch.coords)
        self.static_mask.copy_(batch.mask)

    def capture(self) -> None:
        for _ in range(self.cfg.warmup_iters):
            self.train_step(self.static_msa, self.static_aatype, self.static_coords, self.static_mask)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_msa, self.static_aatype, self.static_coords, self.static_mask)

    def fit(self, batches: list[ProteinBatch]) -> list[float]:
        losses = []
        for batch in batches:
            if self.graph is None:
                loss = self.train_step(batch.msa.to(self.device), batch.aatype.to(self.device), batch.coords.to(self.device), batch.mask.to(self.device))
                losses.append(float(loss))
                continue
            self.load(batch)
            self.static_aatype = batch.aatype.to(self.device)  # expect: GS401
            self.graph.replay()
            self.loss_history.append(self.static_loss)  # expect: GS407
            losses.append(float(self.static_loss))
        return losses
