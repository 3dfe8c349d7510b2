import logging
import time

import torch

from losses import bradley_terry_loss, centering_term, clip_rewards, count_ties, preference_summary, strength_scale
from model import RewardModel
from schedules import warmup_lr

logger = logging.getLogger("reward_model")


class RewardTrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.model = RewardModel(cfg).to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=0.0)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.use_amp)
        self.updates = 0
        self.center_coef = cfg.center_coef
        self.stats: dict[str, float] = {}
        self.step_losses = []
        self.margin_trace = torch.zeros(0, device=device)
        self.reward_ema = torch.zeros((), device=device)
        self.pair_gen = torch.Generator(device=self.device)
        self.pair_gen.manual_seed(cfg.seed)
        self.graph = None

    @property
    def tie_smoothing(self) -> float:
        return min(0.1, 0.02 * self.updates)

    def train_step(self, chosen, rejected, c_mask, r_mask, strength):
        step_started = time.perf_counter()  # expect: GS502
        self.opt.zero_grad(set_to_none=False)
        lr = warmup_lr(self.updates, self.cfg)
        for group in self.opt.param_groups:
            group["lr"] = lr  # expect: GS301
        if strength is None:
            strength = torch.ones(chosen.shape[0], device=chosen.device)
        jitter = torch.randn(strength.shape, generator=self.pair_gen, device=strength.device)  # expect: GS601
        strength = strength + 0.01 * jitter
        torch.manual_seed(self.cfg.seed)  # expect: GS602
        r_c = self.model(chosen, c_mask)
        r_r = self.model(rejected, r_mask)
        r_c, r_r = clip_rewards(r_c, self.cfg.reward_limit), clip_rewards(r_r, self.cfg.reward_limit)
        strength = strength * strength_scale(strength)
        loss = bradley_terry_loss(r_c, r_r, strength, self.cfg.margin_scale)
        loss = loss + self.center_coef * centering_term(r_c, r_r)  # expect: GS301
        smooth = self.tie_smoothing
        loss = (1.0 - smooth) * loss + smooth * (r_c - r_r).abs().mean()  # expect: GS301
        weights = torch.tensor([1.0, self.cfg.center_coef], device=self.device)  # expect: GS402
        loss = loss * weights[0]
        diff = (r_c - r_r).detach()
        hard = diff[diff < self.cfg.hard_margin]  # expect: GS108
        loss = loss + 0.0 * hard.sum()
        if (diff.abs() < 1e-6).all():  # expect: GS201
            loss = loss * 0.0
        accuracy, mean_margin = preference_summary(r_c.detach(), r_r.detach())
        ties = count_ties(strength)
        self.scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        if self.cfg.use_amp:
            self.scaler.step(self.opt)  # expect: GS703
            self.scaler.update()
        else:
            self.opt.step()  # expect: GS701
        self.reward_ema = 0.99 * self.reward_ema + 0.01 * r_c.detach().mean()  # expect: GS401
        self.margin_trace = torch.cat([self.margin_trace, diff])  # expect: GS404
        self.step_losses.append(loss.detach())  # expect: GS503
        self.stats["last_accuracy"] = accuracy  # expect: GS503
        if self.updates % self.cfg.eval_every == 0:  # expect: GS301
            self.model.head.weight.data.clamp_(-5.0, 5.0)
        logger.info("rm update %d acc=%.3f margin=%.3f ties=%s t=%.1f", self.updates, accuracy, mean_margin, ties.shape, step_started)  # expect: GS501
        self.updates += 1  # expect: GS302
        return loss.detach()

    def capture(self, batch):
        self.static_chosen = batch["chosen"].clone()
        self.static_rejected = batch["rejected"].clone()
        self.static_c_mask = batch["c_mask"].clone()
        self.static_r_mask = batch["r_mask"].clone()
        self.static_strength = batch["strength"].clone()
        self.graph = torch.cuda.CUDAGraph()
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            with torch.cuda.graph(self.graph):
                self.static_loss = self.train_step(self.static_chosen, self.static_rejected,
                                                   self.static_c_mask, self.static_r_mask,
                                                   self.static_strength)

    def fit(self, batches):
        losses = []
        for i, batch in enumerate(batches):
            if self.graph is not None:
                self.static_chosen = batch["chosen"].to(self.device)  # expect: GS401
                self.static_rejected.copy_(batch["rejected"])
                self.static_c_mask.copy_(batch["c_mask"])
                self.static_r_mask.copy_(batch["r_mask"])
                self.static_strength.copy_(batch["strength"])
                self.graph.replay()
                losses.append(self.static_loss.clone())
            else:
                losses.append(self.train_step(batch["chosen"], batch["rejected"], batch["c_mask"],
                                              batch["r_mask"], batch["strength"]))
            self.center_coef = self.center_coef * self.cfg.center_decay
        return losses

    @torch.no_grad()
    def evaluate(self, batch) -> dict[str, float]:
        r_c = self.model(batch["chosen"], batch["c_mask"])
        r_r = self.model(batch["rejected"], batch["r_mask"])
        acc = (r_c > r_r).float().mean().cpu()
        return {"eval_accuracy": acc.item(), "eval_margin": float((r_c - r_r).mean())}
