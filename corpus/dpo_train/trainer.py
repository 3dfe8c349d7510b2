"""DPO trainer: a policy against a frozen reference, one captured optimisation step."""

from __future__ import annotations

import logging
import math

import torch

from config import DPOConfig
from losses import dpo_loss, gather_logps, preference_stats, trim_to_longest
from model import TinyCausalLM, concatenated_forward, make_reference, token_entropy

logger = logging.getLogger("dpo.trainer")


def cosine_with_warmup(step: int, warmup: int, total: int, base_lr: float) -> float:
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))


class DPOTrainer:
    def __init__(self, cfg: DPOConfig, device: torch.device, total_steps: int):
        self.cfg = cfg
        self.device = device
        self.total_steps = total_steps
        self.policy = TinyCausalLM(cfg.model).to(device)
        self.reference = make_reference(self.policy)
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr, weight_decay=0.0)
        self.beta = cfg.beta
        self.lr_now = cfg.lr
        self.num_updates = 0
        self.margin_history: list[float] = []
        self.loss_history: list[torch.Tensor] = []
        self._ref_cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_batch: dict[str, torch.Tensor] = {}
        self.static_loss: torch.Tensor | None = None

    # ------------------------------------------------------------------ step
    def reference_logps(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        chosen_ids = batch["chosen_ids"]
        cached = self._ref_cache.get(chosen_ids.data_ptr()) if self.cfg.cache_reference else None  # expect: GS506
        if cached is not None:
            return cached
        with torch.no_grad():
            ref_c_logits, ref_r_logits = concatenated_forward(self.reference, batch)
            ref_c = gather_logps(ref_c_logits, batch["chosen_ids"], batch["chosen_mask"], self.cfg.average_log_prob)
            ref_r = gather_logps(ref_r_logits, batch["rejected_ids"], batch["rejected_mask"], self.cfg.average_log_prob)
        if self.cfg.cache_reference:
            self._ref_cache[chosen_ids.data_ptr()] = (ref_c, ref_r)  # expect: GS503, GS506
        return ref_c, ref_r

    def train_step(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        self.policy.train()
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr_now  # expect: GS301
        ids, mask = trim_to_longest(batch["chosen_ids"], batch["chosen_mask"])
        pol_c_logits, pol_r_logits = concatenated_forward(self.policy, batch)
        pol_c = gather_logps(pol_c_logits, batch["chosen_ids"], batch["chosen_mask"], self.cfg.average_log_prob)
        pol_r = gather_logps(pol_r_logits, batch["rejected_ids"], batch["rejected_mask"], self.cfg.average_log_prob)
        ref_c, ref_r = self.reference_logps(batch)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            pol_c, pol_r, ref_c, ref_r, beta=self.beta, label_smoothing=self.cfg.label_smoothing, loss_type=self.cfg.loss_type
        )
        loss = losses.mean()
        assert torch.isfinite(loss), "non-finite DPO loss"  # expect: GS201
        self.optimizer.zero_grad(set_to_none=False)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.max_grad_norm, error_if_nonfinite=True)  # expect: GS110
        self.optimizer.step()  # expect: GS701
        self.num_updates += 1  # expect: GS302

        stats = preference_stats(chosen_rewards, rejected_rewards)
        stats["entropy"] = (token_entropy(pol_c_logits[:, : ids.shape[1]]) * mask).sum() / mask.sum()
        stats["grad_norm"] = grad_norm
        self.margin_history.extend((chosen_rewards - rejected_rewards).tolist())  # expect: GS102, GS503
        if self.num_updates % self.cfg.log_every == 0:  # expect: GS301
            host = {k: v.detach().cpu() for k, v in stats.items()}  # expect: GS103
            logger.info("update %d: loss=%.4f acc=%.2f", self.num_updates, loss.item(), host["rewards/accuracy"])  # expect: GS101, GS501
        return loss.detach()

    # --------------------------------------------------------------- capture
    def capture(self, batch: dict[str, torch.Tensor]) -> None:
        if self.device.type != "cuda":
            return
        self.static_batch = {k: v.clone() for k, v in batch.items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_batch)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_loss = self.train_step(self.static_batch)

    def fit(self, batches: list[dict[str, torch.Tensor]]) -> list[torch.Tensor]:
        for step, batch in enumerate(batches):
            batch = {k: v.to(self.device) for k, v in batch.items()}
            self.beta = self.cfg.beta * min(1.0, (step + 1) / self.cfg.beta_warmup_steps)
            self.lr_now = cosine_with_warmup(step, self.cfg.warmup_steps, self.total_steps, self.cfg.lr)
            if step == 0:
                self.capture(batch)
            if self.graph is not None:
                for k, buf in self.static_batch.items():
                    buf.copy_(batch[k])
                self.graph.replay()
                self.loss_history.append(self.static_loss)  # expect: GS407
            else:
                self.loss_history.append(self.train_step(batch))
            if step % self.cfg.log_every == 0:
                logger.debug("step %d beta=%.3f lr=%.2e loss=%.4f", step, self.beta, self.lr_now, self.loss_history[-1].item())
        return self.loss_history
