import os
import random
import tempfile

import torch

from criterion import SetCriterion
from evaluator import APAccumulator
from matcher import HungarianMatcher
from model import TinyDETR
from schedule import StepDecay


class DetrTrainer:
    def __init__(self, cfg, device):
        self.cfg = cfg
        self.device = device
        self.model = TinyDETR(cfg).to(device)
        matcher = HungarianMatcher(cfg.cost_class, cfg.cost_bbox, cfg.cost_giou)
        weight_dict = {"loss_ce": cfg.loss_weights["ce"], "loss_bbox": cfg.loss_weights["bbox"],
                       "loss_giou": cfg.loss_weights["giou"]}
        self.criterion = SetCriterion(cfg.num_classes, matcher, weight_dict, cfg.eos_coef).to(device)
        param_dicts = [
            {"params": [p for n, p in self.model.named_parameters() if "backbone" not in n]},
            {"params": [p for n, p in self.model.named_parameters() if "backbone" in n], "lr": cfg.lr * 0.1},
        ]
        self.opt = torch.optim.SGD(param_dicts, lr=cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay)
        self.sched = StepDecay(cfg.lr, cfg.lr_drop)
        self.iteration = 0
        self.ap = APAccumulator()
        self.box_gen = torch.Generator(device=self.device)
        self.dump_dir = tempfile.mkdtemp(prefix="detr_dbg_")
        self.step_fn = self.train_step
        if device.type == "cuda":
            self.step_fn = torch.compile(self.train_step, mode="reduce-overhead")

    def train_step(self, images: torch.Tensor, targets: list[dict], epoch: int) -> torch.Tensor:
        self.model.train()
        g_lr = self.sched.value(self.iteration)
        self.opt.param_groups[0]["lr"] = g_lr  # expect: GS301
        if random.random() < self.cfg.hflip_prob:  # expect: GS502
            images = images.flip(-1)
            targets = [dict(t, boxes=t["boxes"] * torch.tensor([-1.0, 1.0, 1.0, 1.0]) + torch.tensor([1.0, 0.0, 0.0, 0.0])) for t in targets]  # expect: GS402
        self.box_gen.manual_seed(self.cfg.seed + self.iteration)  # expect: GS602
        noisy = [dict(t, boxes=(t["boxes"] + self.cfg.box_noise * torch.randn(t["boxes"].shape, generator=self.box_gen, device=t["boxes"].device)).clamp(0, 1)) for t in targets]  # expect: GS601
        max_targets = max(len(t["boxes"]) for t in targets)
        valid = torch.zeros(len(targets), max_targets, device=images.device)  # expect: GS408
        outputs = self.model(images)
        loss_dict = self.criterion(outputs, noisy)
        weight_dict = self.criterion.weight_dict
        main = sum(loss_dict[k] * weight_dict[k] for k in weight_dict)
        aux_w = self.cfg.aux_weight * 0.5 ** epoch
        aux = sum(v * weight_dict[k.rsplit("_", 1)[0]] for k, v in loss_dict.items() if k not in weight_dict)
        loss = main + aux_w * aux + 0.0 * valid.sum()  # expect: GS301
        if not torch.isfinite(loss).all():  # expect: GS201
            raise FloatingPointError("loss is not finite")
        self.opt.zero_grad()
        loss.backward()
        if epoch < self.cfg.freeze_backbone_epochs:  # expect: GS301
            for p in self.model.backbone.parameters():
                p.grad.zero_()
        if any(torch.isnan(p.grad).any() for p in self.model.parameters() if p.grad is not None):  # expect: GS201
            self.opt.zero_grad()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_max_norm, error_if_nonfinite=True)  # expect: GS110
        self.opt.step()
        self.ap.update(outputs["pred_logits"].detach(), targets)
        if self.cfg.dump_matches:
            torch.save(loss_dict, os.path.join(self.dump_dir, f"losses_{self.iteration}.pt"))  # expect: GS504
        self.iteration += 1  # expect: GS302
        return loss.detach()

    def fit(self, batches, epochs: int) -> list[float]:
        history = []
        for epoch in range(epochs):
            for images, targets in batches:
                loss = self.step_fn(images.to(self.device), [{k: v.to(self.device) for k, v in t.items()} for t in targets], epoch)
                history.append(loss.item())
        return history
