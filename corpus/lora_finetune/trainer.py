"""LoRA fine-tuning loop: the micro-step is compiled with mode="reduce-overhead" on a GPU."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from config import FinetuneConfig
from lora import adapters_disabled, inject_lora
from model import CausalLM, document_ids
from paged_adam import PagedAdamW

log = logging.getLogger("lora_ft")


class StepBar:
    def __init__(self, total: int):
        self.total = total
        self.n = 0
        self.postfix: dict = {}

    def update(self, n: int = 1) -> None:
        self.n += n  # expect: GS302

    def set_postfix(self, **kw) -> None:
        self.postfix.update(kw)


def append_row(history: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    history = torch.cat([history, row[None]], dim=0)  # expect: GS404
    return history


class LoRATrainer:
    def __init__(self, cfg: FinetuneConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.model = CausalLM(cfg.model).to(device)
        self.model.gradient_checkpointing = cfg.gradient_checkpointing
        for p in self.model.parameters():
            p.requires_grad_(False)
        lc = cfg.lora
        self.adapters = inject_lora(self.model, lc.target_modules, lc.r, lc.alpha, lc.dropout, device)
        for p in self.model.lm_head.parameters():
            p.requires_grad_(True)
        adapter_params = [p for a in self.adapters for p in (a.lora_A, a.lora_B)]
        self.opt = PagedAdamW(adapter_params, lr=cfg.lr, weight_decay=cfg.weight_decay, pin_pages=device.type == "cuda")
        self.head_opt = torch.optim.AdamW(self.model.lm_head.parameters(), lr=cfg.head_lr)
        self.micro_step = 0
        self.tokens_seen = 0
        self.t0 = time.perf_counter()
        self.throughput: list[float] = []
        self.token_trace = torch.zeros(0, device=device)
        self.last_loss_str = ""
        self.pbar = StepBar(total=0)
        self.samples: list[list[int]] = []
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")
        else:
            self.step_fn = self.train_step

    def train_step(self, input_ids: torch.Tensor, labels: torch.Tensor, loss_mask: torch.Tensor, seq_lens: list[int]) -> torch.Tensor:
        cfg = self.cfg
        if cfg.deterministic_dropout:
            torch.random.manual_seed(cfg.seed * 1000 + self.micro_step)  # expect: GS602
        doc_ids = document_ids(seq_lens, input_ids.device)
        logits = self.model(input_ids, doc_ids)
        ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
        mask = loss_mask.flatten().float()
        loss = (ce * mask).sum() / mask.sum().clamp(min=1.0)
        if torch.isnan(loss) or torch.isinf(loss):  # expect: GS201
            raise FloatingPointError("non-finite loss")
        (loss / cfg.accum_steps).backward()
        pred = logits.flatten(0, 1).argmax(-1)
        keep = loss_mask.flatten().bool()
        acc = (pred[keep] == labels.flatten()[keep]).float().mean()  # expect: GS108
        self.tokens_seen += int(loss_mask.sum())  # expect: GS105
        self.token_trace = append_row(self.token_trace, mask.sum())  # expect: GS401
        self.micro_step += 1  # expect: GS302
        if self.micro_step % cfg.accum_steps == 0:  # expect: GS301
            torch.nn.utils.clip_grad_norm_(self.model.lm_head.parameters(), 1.0)
            self.opt.step()
            self.head_opt.step()  # expect: GS701
            self.opt.zero_grad(set_to_none=False)
            self.head_opt.zero_grad(set_to_none=False)
        now = time.perf_counter()  # expect: GS502
        self.throughput.append(self.tokens_seen / max(now - self.t0, 1e-9))  # expect: GS503
        self.last_loss_str = f"{loss.detach():.4f}"  # expect: GS104
        self.pbar.update(1)  # expect: GS505
        if cfg.log_every:
            log.info("micro-step %d tokens %d", self.micro_step, self.tokens_seen)  # expect: GS501
        if cfg.dump_dir is not None:
            Path(cfg.dump_dir, "progress.txt").write_text(f"{self.micro_step}\n")  # expect: GS504
        return torch.stack([loss.detach(), acc.detach()])

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, use_adapters: bool = True) -> list[int]:
        self.model.eval()
        ids = prompt.clone()
        ctx = adapters_disabled(self.adapters) if not use_adapters else torch.no_grad()
        with ctx:
            for _ in range(self.cfg.sample_len):
                logits = self.model(ids)[:, -1]
                next_id = logits.argmax(-1, keepdim=True)
                ids = torch.cat([ids, next_id], dim=1)
                if next_id.item() == 0:
                    break
        self.model.train()
        return ids[0].tolist()

    def fit(self, batches: list[dict]) -> torch.Tensor:
        self.pbar = StepBar(total=len(batches))
        out = torch.zeros(2)
        for i, batch in enumerate(batches):
            out = self.step_fn(batch["input_ids"], batch["labels"], batch["loss_mask"], batch["seq_lens"]).clone()
            if self.cfg.sample_every and (i + 1) % self.cfg.sample_every == 0:
                prompt = batch["input_ids"][:1, :4]
                self.samples.append(self.generate(prompt))
                self.samples.append(self.generate(prompt, use_adapters=False))
        return out
