"""Pre-training loop: Muon for hidden matrices, AdamW for the rest, one CUDA graph per step."""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from checkpointing import save_checkpoint
from config import TrainConfig
from curriculum import batch_size_at, lr_at, seq_len_at
from data import SyntheticTokens
from model import GPT
from muon import Muon
from perf import MetricsLogger, ThroughputMeter, append_history, global_param_norm

logger = logging.getLogger(__name__)


def make_loader(cfg: TrainConfig, n_windows: int) -> DataLoader:
    ds = SyntheticTokens(cfg.model.vocab_size, cfg.seq_len, n_windows, cfg.seed)
    g = torch.Generator().manual_seed(cfg.seed)
    return DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, drop_last=True, generator=g, pin_memory=True)


class PretrainTrainer:
    def __init__(self, cfg: TrainConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = GPT(cfg.model).to(device)
        hidden_matrices, others = [], []
        for name, p in self.model.named_parameters():
            is_hidden = p.ndim == 2 and not name.startswith(("wte", "lm_head"))
            (hidden_matrices if is_hidden else others).append(p)
        self.muon = Muon(hidden_matrices, lr=cfg.lr, momentum=cfg.momentum, ns_steps=cfg.ns_steps)
        self.adamw = torch.optim.AdamW(others, lr=cfg.lr * cfg.adamw_lr_ratio, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
        self.loss_ema = torch.full((), cfg.init_loss_ema, device=device)
        self.grad_norm_history = torch.zeros(0, device=device)
        self.step = 0
        self.skipped_steps = 0
        self.tokens_seen = 0
        self.meter = ThroughputMeter(self.model.num_flops_per_token(), cfg.peak_flops)
        self.metrics = MetricsLogger()
        self.loss_trace: list[torch.Tensor] = []
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_input = torch.zeros(cfg.batch_size, cfg.seq_len, dtype=torch.long, device=device)
        self.static_target = torch.zeros(cfg.batch_size, cfg.seq_len, dtype=torch.long, device=device)
        self.static_loss: torch.Tensor | None = None
        self.static_param_norm: torch.Tensor | None = None

    def zero_grad(self) -> None:
        self.muon.zero_grad(set_to_none=False)
        self.adamw.zero_grad(set_to_none=False)

    def train_step(self, input_ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        torch.cuda.manual_seed(self.cfg.seed + self.step)  # expect: GS602
        bsz = batch_size_at(self.step, self.cfg)
        seq_len = seq_len_at(self.step, self.cfg)
        tokens = torch.cat([input_ids, targets[:, -1:]], dim=1)[:bsz]  # expect: GS301
        tokens = tokens[:, : seq_len + 1]  # expect: GS301
        input_ids, targets = tokens[:, :-1], tokens[:, 1:]
        if not torch.equal(input_ids[:, 1:], targets[:, :-1]):  # expect: GS109
            raise ValueError("targets must be the inputs shifted by one token")

        accum = self.cfg.grad_accum_steps
        total = torch.zeros((), device=input_ids.device)
        for micro_x, micro_y in zip(input_ids.chunk(accum), targets.chunk(accum)):
            logits = self.model(micro_x)
            ce = F.cross_entropy(logits.flatten(0, 1).float(), micro_y.flatten())
            z_loss = self.cfg.z_loss_coef * torch.logsumexp(logits.float(), dim=-1).pow(2).mean()
            loss = (ce + z_loss) / accum
            loss.backward()
            total += loss.detach()
        n_tokens = int((targets != self.cfg.pad_id).sum())  # expect: GS105
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.grad_norm_history = append_history(self.grad_norm_history, grad_norm)  # expect: GS401

        if total > self.cfg.spike_factor * self.loss_ema:  # expect: GS201
            self.skipped_steps += 1  # expect: GS302
            logger.warning("loss spike at step %d, skipping update", self.step)  # expect: GS501
            self.zero_grad()
            return total
        self.loss_ema = 0.98 * self.loss_ema + 0.02 * total  # expect: GS401

        lr = lr_at(self.step, self.cfg)
        self.muon.set_lr(lr)
        for group in self.adamw.param_groups:
            group["lr"] = lr * self.cfg.adamw_lr_ratio  # expect: GS301
        self.muon.step()
        self.adamw.step()  # expect: GS701
        self.zero_grad()

        if self.step % self.cfg.ckpt_every == 0:  # expect: GS301
            extra = {"loss_ema": self.loss_ema.clone(), "grad_norms": self.grad_norm_history.clone()}
            save_checkpoint(self.model, {"muon": self.muon, "adamw": self.adamw}, self.step, self.cfg.ckpt_dir, extra)
        if self.device.type == "cuda":
            torch.cuda.synchronize()  # expect: GS106
        stats = self.meter.update(n_tokens)
        peak_mem_gb = torch.cuda.max_memory_allocated() / 2**30 if self.device.type == "cuda" else 0.0  # expect: GS405
        self.metrics.log(  # expect: GS501
            {
                "train/loss": float(total),  # expect: GS105
                "train/grad_norm": grad_norm.detach(),
                "perf/peak_mem_gb": peak_mem_gb,
                **stats,
            },
            step=self.step,
        )
        self.step += 1  # expect: GS302
        self.tokens_seen += bsz * seq_len  # expect: GS302
        return total

    def build_eval_graph(self, sample_ids: torch.Tensor) -> None:
        model = self.model
        model.register_forward_hook(self._record_logit_stats)  # expect: GS706
        self.eval_forward = torch.cuda.make_graphed_callables(model, (sample_ids,))

    def _record_logit_stats(self, module, inputs, output) -> None:
        self.last_logit_absmax = output.detach().abs().amax()

    def capture(self) -> None:
        param_norm = torch.compile(global_param_norm)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_input, self.static_target)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_loss = self.train_step(self.static_input, self.static_target)
            self.static_param_norm = param_norm(self.model.parameters())  # expect: GS709

    def fit(self, loader: DataLoader, steps: int) -> list[torch.Tensor]:
        for _, (x, y) in zip(range(steps), loader):
            if self.graph is not None:
                self.static_input = x.to(self.device, non_blocking=True)  # expect: GS401
                self.static_target.copy_(y, non_blocking=True)
                self.graph.replay()
                self.loss_trace.append(self.static_loss)  # expect: GS407
            else:
                self.loss_trace.append(self.train_step(x.to(self.device), y.to(self.device)))
        return self.loss_trace
