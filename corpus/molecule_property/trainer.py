"""Training and evaluation of the molecular property regressor."""

from __future__ import annotations

import os
import time

import torch
import torch.nn.functional as F

from config import MolConfig
from ema import ModelEma
from features import pad_graphs
from model import MolTransformer, readout


class MetricLogger:
    def __init__(self):
        self.rows: list[dict] = []

    def log(self, **kw) -> None:
        self.rows.append(kw)  # expect: GS503


class PropertyTrainer:
    def __init__(self, cfg: MolConfig, device: torch.device, out_dir: str):
        self.cfg = cfg
        self.device = device
        self.out_dir = out_dir
        self.model = MolTransformer(cfg).to(device)
        self.head = torch.nn.Linear(cfg.hidden, cfg.num_targets).to(device)
        body = [p for n, p in self.model.named_parameters() if not n.startswith("atoms.embed")]
        self.opt = torch.optim.SGD(body + list(self.head.parameters()), lr=cfg.lr, momentum=0.9, nesterov=True)
        self.emb_opt = torch.optim.Adagrad(self.model.atoms.embed.parameters(), lr=cfg.emb_lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.amp)
        self.ema = ModelEma(self.model, cfg.ema_decay)
        self.running_mean = torch.zeros(cfg.num_targets, device=device)
        self.running_var = torch.ones(cfg.num_targets, device=device)
        self.seen = 0
        self.num_updates = 0
        self.metrics = MetricLogger()
        self.pad_cache: dict[int, torch.Tensor] = {}
        self.graph = None
        self.static_loss = None
        self.readout_fn = torch.compile(readout, mode="default")

    def normalise(self, y: torch.Tensor) -> torch.Tensor:
        m = self.cfg.stats_momentum
        self.running_mean.mul_(m).add_(y.mean(0), alpha=1 - m)
        self.running_var = m * self.running_var + (1 - m) * y.var(0, unbiased=False)  # expect: GS401
        return (y - self.running_mean) / self.running_var.clamp(min=1e-6).sqrt()

    def forward_batch(self, types, charges, bonds):
        type_pad, charge_pad, bond_pad, pad, lengths = pad_graphs(types, charges, bonds)
        lens = torch.tensor(lengths, device=self.device)  # expect: GS402
        assert (lens > 0).all()  # expect: GS201
        cached = self.pad_cache.get(lens.data_ptr())  # expect: GS506
        if cached is not None and cached.shape == pad.shape:
            pad = cached
        h = self.model(type_pad, charge_pad, bond_pad, pad)
        return readout(h, pad, self.head), lens

    def train_step(self, types: list[torch.Tensor], charges: list[torch.Tensor], bonds: list[torch.Tensor], y: torch.Tensor):
        torch.manual_seed(self.cfg.seed)  # expect: GS602
        pred, lens = self.forward_batch(types, charges, bonds)
        target = self.normalise(y)
        loss = F.smooth_l1_loss(pred, target)
        if torch.isnan(loss):  # expect: GS201
            loss = torch.zeros_like(loss)
        self.opt.zero_grad(set_to_none=False)
        self.emb_opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)  # expect: GS703
        self.emb_opt.step()  # expect: GS701
        self.scaler.update()
        self.num_updates += 1  # expect: GS302
        self.seen += len(types)  # expect: GS302
        self.ema.update(self.model, self.num_updates)
        n_atoms = int(lens.sum())  # expect: GS105
        if self.cfg.save_ema:
            torch.save(self.ema.module.state_dict(), os.path.join(self.out_dir, "ema.pt"))  # expect: GS504
        self.metrics.log(step=self.num_updates, atoms=n_atoms)  # expect: GS501
        return loss.detach()

    @torch.no_grad()
    def evaluate(self, types, charges, bonds, y) -> torch.Tensor:
        self.model.eval()
        pred, _ = self.forward_batch(types, charges, bonds)
        pred = pred * self.running_var.sqrt() + self.running_mean
        mae = (pred - y.to(self.device)).abs().mean(0)
        self.model.train()
        return mae

    def dense_inputs(self, sample):
        type_pad, charge_pad, bond_pad, pad, _ = pad_graphs(*sample[:3])
        return type_pad, charge_pad, bond_pad, pad

    def capture(self, sample) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                self.train_step(*sample)
        torch.cuda.current_stream().wait_stream(s)
        self.static_sample = sample
        dense = self.dense_inputs(sample)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.static_loss = self.train_step(*self.static_sample)
            self.static_pred = self.readout_fn(self.model(*dense), dense[-1], self.head)  # expect: GS709
        self.graph = g

    def fit(self, batch) -> float:
        if self.device.type == "cuda":
            if self.graph is None:
                self.capture(batch)
            self.static_sample[3].copy_(batch[3])
            self.graph.replay()
            return float(self.static_loss)
        return float(self.train_step(*batch))

    def epoch_report(self, val_batch) -> dict[str, float]:
        mae = self.evaluate(*val_batch).cpu()
        t0 = time.time()
        if self.cfg.save_ema:
            torch.save(self.ema.module.state_dict(), os.path.join(self.out_dir, "ema.pt"))
        report = {f"mae_{n}": float(v) for n, v in zip(self.cfg.target_names, mae.tolist())}
        report["eval_time"] = float(time.time() - t0 >= 0)
        return report
