"""World-model training: the loss module is graphed with make_graphed_callables on a GPU."""

from __future__ import annotations

import torch

from config import WorldModelConfig
from world_model import VideoWorldModel


def check_clip(module, args):
    frames, actions = args
    if frames.dim() != 5 or actions.dim() != 3:
        raise ValueError("expected frames [B, T, C, H, W] and actions [B, T, A]")


class WorldModelTrainer:
    def __init__(self, cfg: WorldModelConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.loss_module = VideoWorldModel(cfg).to(device)
        self.loss_module.register_forward_pre_hook(check_clip)  # expect: GS706
        self.opt = torch.optim.Adam(self.loss_module.parameters(), lr=cfg.lr)
        self.loss_fn = self.loss_module
        self.step = 0

    def graph_loss(self, frames: torch.Tensor, actions: torch.Tensor) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):  # expect: GS702
            self.loss_fn = torch.cuda.make_graphed_callables(self.loss_module, (frames, actions))

    def train_step(self, frames: torch.Tensor, actions: torch.Tensor) -> float:
        loss, pred = self.loss_fn(frames, actions)
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.loss_module.parameters(), 100.0)
        self.opt.step()
        m = self.loss_module
        m.teacher_forcing_p = max(self.cfg.tf_floor, m.teacher_forcing_p * self.cfg.tf_decay)
        m.global_step += 1
        self.step += 1
        return loss.item()
