"""Training loop: weighted sampling, row CutMix, early stopping, plateau LR."""

from __future__ import annotations

import copy
import logging
import random

import torch
import torch.nn.functional as F
from progress import ProgressBar

from config import FTConfig
from metrics import accuracy, auroc
from mixing import cutmix_rows, mix_targets
from model import FTTransformer

logger = logging.getLogger("ft")


class FTTrainer:
    def __init__(self, cfg: FTConfig, device: torch.device, class_counts: list[int]):
        self.cfg = cfg
        self.device = device
        self.model = FTTransformer(cfg).to(device)
        backbone = [p for n, p in self.model.named_parameters() if not n.startswith("head")]
        self.opt = torch.optim.AdamW(backbone, lr=cfg.lr, weight_decay=cfg.weight_decay, capturable=device.type == "cuda")
        self.head_opt = torch.optim.Adagrad(self.model.head.parameters(), lr=cfg.head_lr)
        self.scaler = torch.amp.GradScaler(device.type, enabled=cfg.use_amp and device.type == "cuda")
        self.plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt, factor=0.5, patience=0)
        self.class_counts = class_counts
        self.epoch = 0
        self.global_step = 0
        self.batch_losses: list[torch.Tensor] = []
        self.pbar = ProgressBar(total=0, enabled=False)
        self.best_state = copy.deepcopy(self.model.state_dict())
        self.best_auc = -1.0
        self.bad_epochs = 0
        self.step_fn = self.train_step
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")

    def class_weights(self) -> torch.Tensor:
        total = sum(self.class_counts)
        return torch.tensor([total / (len(self.class_counts) * c) for c in self.class_counts], device=self.device)  # expect: GS402

    def train_step(self, x_num: torch.Tensor, x_cat: torch.Tensor, y: torch.Tensor, lam: float, perm: torch.Tensor):
        tokens = self.model.tokens(x_num, x_cat)
        y_onehot = F.one_hot(y, num_classes=self.cfg.n_classes).float()
        if lam < 1.0:  # expect: GS301
            tokens, ratio = cutmix_rows(tokens, perm, lam)
            target = mix_targets(y_onehot, perm, ratio)
        else:
            target = y_onehot
        with torch.autocast(self.device.type, enabled=self.cfg.use_amp):
            logits = self.model(tokens)
            loss = F.cross_entropy(logits.float(), target, weight=self.class_weights(), label_smoothing=self.cfg.label_smoothing)
        if not torch.isfinite(loss):  # expect: GS201
            logger.warning("non-finite loss at step %d", self.global_step)  # expect: GS501
        self.opt.zero_grad(set_to_none=False)
        self.head_opt.zero_grad(set_to_none=False)
        self.scaler.scale(loss).backward()
        if self.epoch <= self.cfg.freeze_tokenizer_epochs:  # expect: GS301
            self.model.num_tok.weight.grad.zero_()
        self.scaler.step(self.opt)  # expect: GS703, GS301
        self.scaler.update()
        self.head_opt.step()  # expect: GS701
        if self.cfg.debug_checks:
            ref = logits.detach().float().softmax(-1)
            ok = torch.allclose(ref.sum(-1), torch.ones_like(ref[:, 0]))  # expect: GS109
            drift = (ref - target).abs().max() if ok else ref.new_zeros(())
            msg = f"max prob drift {drift:.4f}"  # expect: GS104
            logger.debug(msg)  # expect: GS501
            if self.device.type == "cuda":
                self.peak_bytes = torch.cuda.max_memory_allocated(self.device)  # expect: GS405
                self.last_perm = perm.pin_memory()  # expect: GS406
        if random.random() < 0.01:  # expect: GS502
            torch.manual_seed(self.cfg.seed + self.global_step)  # expect: GS602
        self.batch_losses.append(loss.detach())  # expect: GS503
        self.pbar.update(1)  # expect: GS505
        self.global_step = self.global_step + 1  # expect: GS302
        return loss.detach(), logits.detach()

    def run_epoch(self, batches, gen: torch.Generator) -> float:
        self.epoch += 1
        total = 0.0
        for x_num, x_cat, y in batches:
            perm = torch.randperm(y.shape[0], generator=gen)
            lam = 1.0
            if torch.rand((), generator=gen).item() < self.cfg.cutmix_prob:
                lam = float(torch.distributions.Beta(self.cfg.cutmix_alpha, self.cfg.cutmix_alpha).sample())
            loss, _ = self.step_fn(x_num.to(self.device), x_cat.to(self.device), y.to(self.device), lam, perm.to(self.device))
            total += loss.item()
        return total / max(len(batches), 1)

    @torch.no_grad()
    def evaluate(self, x_num: torch.Tensor, x_cat: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
        self.model.eval()
        logits = self.model(self.model.tokens(x_num.to(self.device), x_cat.to(self.device)))
        self.model.train()
        probs = logits.softmax(-1)[:, 1].cpu()
        return {"auroc": auroc(probs, y), "accuracy": accuracy(logits.argmax(-1).cpu(), y)}

    def end_epoch(self, metrics: dict[str, float], val_loss: float) -> bool:
        self.plateau.step(val_loss)
        if metrics["auroc"] > self.best_auc:
            self.best_auc = metrics["auroc"]
            self.best_state = copy.deepcopy(self.model.state_dict())
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.cfg.patience
