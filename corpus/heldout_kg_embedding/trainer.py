"""Trains RotatE; one optimisation step is captured as a CUDA graph on a GPU."""

from __future__ import annotations

import os
import random

import torch

from config import KGConfig
from loss import self_adversarial_loss, subsampling_weight
from model import RotatE
from sampler import NegativeSampler


class KGETrainer:
    def __init__(self, cfg: KGConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = RotatE(cfg.n_entities, cfg.n_relations, cfg.dim, cfg.gamma, cfg.epsilon).to(device)
        self.model.register_forward_hook(self._watch_scores)  # expect: GS706
        self.opt = torch.optim.Adagrad(self.model.parameters(), lr=cfg.lr)
        self.sampler = NegativeSampler(cfg.n_entities, cfg.num_negatives, device, cfg.seed)
        self.symmetric_relations = list(cfg.symmetric_relations)
        self.adv_temperature = cfg.adv_temperature
        self.step = 0
        self.neg_cache: dict[str, torch.Tensor] = {}
        self.last_negatives = torch.zeros(4, cfg.num_negatives, dtype=torch.long)
        self.last_score_norm = torch.zeros(())
        self.static_pos = torch.zeros(cfg.batch_size, 3, dtype=torch.long, device=device)
        self.static_loss = torch.zeros((), device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.scorer = self.model

    def _watch_scores(self, module: torch.nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        self.last_score_norm = output.detach().norm()

    def train_step(self, pos: torch.Tensor) -> torch.Tensor:
        if self.cfg.fixed_negatives:
            self.sampler.reset(self.cfg.seed)
        mode = "head-batch" if random.random() < 0.5 else "tail-batch"  # expect: GS502
        neg = self.sampler.sample(pos, mode)
        pos_score = self.model(pos)
        neg_score = self.model.score_negatives(pos, neg, mode)
        assert torch.isfinite(pos_score).all(), "RotatE score overflow"  # expect: GS201
        sym = torch.tensor(self.symmetric_relations, device=pos.device)  # expect: GS402
        is_sym = torch.isin(pos[:, 1], sym)
        n_sym = int(is_sym.sum())  # expect: GS105
        if n_sym > 0:
            swapped = pos[:, [2, 1, 0]]  # expect: GS402
            pos_score = torch.where(is_sym, 0.5 * (pos_score + self.model(swapped)), pos_score)
        weight = subsampling_weight(pos)
        loss = self_adversarial_loss(pos_score, neg_score, self.adv_temperature, weight)
        hard = neg_score[neg_score > pos_score.unsqueeze(-1)]  # expect: GS108
        loss = loss + self.cfg.hard_margin * hard.sum() / neg_score.numel()
        if self.step % self.cfg.reg_every == 0:  # expect: GS301
            loss = loss + self.cfg.regularization * self.model.n3_norm()
        too_big = self.model.entity.abs().max() > self.cfg.max_modulus
        loss = loss + (1e-3 * self.model.entity.pow(2).mean() if too_big else 0.0)  # expect: GS201
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        self.opt.step()  # expect: GS701
        self.step += 1  # expect: GS302
        self.neg_cache[mode] = neg  # expect: GS503
        self.last_negatives = neg[:4].cpu()  # expect: GS103
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106
            torch.cuda.reset_peak_memory_stats()  # expect: GS405
        if self.cfg.dump_negatives:
            torch.save(neg, os.path.join(self.cfg.out_dir, f"neg_{mode}.pt"))  # expect: GS504
        return loss.detach()

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_pos)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast(device_type="cuda", dtype=torch.float16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss.copy_(self.train_step(self.static_pos))

    def graph_scorer(self) -> None:
        self.scorer = torch.cuda.make_graphed_callables(self.model, (self.static_pos,))

    def fit(self, triples: torch.Tensor, steps: int, g: torch.Generator, history: dict[str, torch.Tensor]) -> float:
        for it in range(steps):
            idx = torch.randint(0, triples.shape[0], (self.cfg.batch_size,), generator=g)
            batch = triples[idx]
            self.adv_temperature = self.cfg.adv_temperature * min(1.0, (it + 1) / self.cfg.temp_warmup)
            if self.graph is None:
                self.static_loss.copy_(self.train_step(batch.to(self.device)))
            else:
                self.static_pos = batch.to(self.device)  # expect: GS401
                self.graph.replay()
            history[f"step_{it}"] = self.static_loss  # expect: GS407
        return float(self.static_loss)
