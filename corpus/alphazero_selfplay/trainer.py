"""Training on replayed self-play: policy cross-entropy + value MSE + L2, step LR schedule."""

from __future__ import annotations

import logging
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from config import AlphaZeroConfig
from metrics import MetricsLogger
from net import PolicyValueNet
from replay import ReplayBuffer

logger = logging.getLogger(__name__)


def step_lr(base: float, step: int, milestones: tuple[int, ...], gamma: float) -> float:
    return base * gamma ** sum(step >= m for m in milestones)


def hflip_board(x: torch.Tensor, size: int) -> torch.Tensor:
    return x.reshape(*x.shape[:-1], size, size).flip(-1).reshape(x.shape)


class AlphaZeroTrainer:
    def __init__(self, net: PolicyValueNet, cfg: AlphaZeroConfig, device: torch.device):
        self.net = net
        self.cfg = cfg
        self.device = device
        self.opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=cfg.momentum, nesterov=True)
        self.lr = cfg.lr
        self.step_count = 0
        self.peak_mem = 0
        self.aug_gen = torch.Generator(device=device)
        self.aug_gen.manual_seed(cfg.seed + 11)
        self.stats: dict[str, list] = defaultdict(list)
        self.metrics_logger = MetricsLogger("train")
        self.graph = None
        self.static_states = self.static_pis = self.static_zs = self.static_legal = None
        self.static_loss = None

    def make_loader(self, replay: ReplayBuffer, seed: int) -> DataLoader:
        return DataLoader(
            replay,
            batch_size=self.cfg.batch_size,
            shuffle=True,
            drop_last=True,
            pin_memory=True,
            generator=torch.Generator().manual_seed(seed),
        )

    def train_step(self, states, pis, zs, legal) -> torch.Tensor:
        n = self.cfg.board
        flip = torch.rand(states.shape[0], generator=self.aug_gen, device=states.device) < 0.5  # expect: GS601
        states = torch.where(flip[:, None, None, None], states.flip(-1), states)
        pis = torch.where(flip[:, None], hflip_board(pis, n), pis)
        legal = torch.where(flip[:, None], hflip_board(legal, n), legal)
        if (zs.abs() > 1).any():  # expect: GS201
            raise ValueError("game outcomes must lie in [-1, 1]")
        illegal_mass = pis[~legal].sum()  # expect: GS108

        logits, values = self.net(states, legal)
        policy_loss = -(pis * F.log_softmax(logits, -1)).sum(-1).mean()
        value_loss = F.mse_loss(values, zs)
        l2 = sum(p.pow(2).sum() for p in self.net.parameters())
        loss = policy_loss + value_loss + self.cfg.l2 * l2
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        for group in self.opt.param_groups:
            group["lr"] = self.lr  # expect: GS301
        self.opt.step()
        self.step_count += 1  # expect: GS302
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106

        with torch.no_grad():
            acc = (logits.argmax(-1) == pis.argmax(-1)).float().mean()
            self.stats["policy_acc"].append(acc.item())  # expect: GS101, GS503
            self.stats["illegal_mass"].append(float(illegal_mass))  # expect: GS105, GS503
            move_hist = torch.bincount(logits.argmax(-1), minlength=n * n)  # expect: GS107
            self.stats["move_hist"].append(move_hist.tolist())  # expect: GS102, GS503
            self.stats["all_draws"].append(torch.equal(zs, torch.zeros_like(zs)))  # expect: GS109, GS503
        if value_loss > 4.0:  # expect: GS201
            logger.warning("value loss diverging at step %d", self.step_count)  # expect: GS501
        self.metrics_logger.log({"policy": policy_loss.detach(), "value": value_loss.detach()}, step=self.step_count)  # expect: GS501
        peak = torch.cuda.max_memory_allocated()  # expect: GS405
        self.peak_mem = max(self.peak_mem, peak)  # expect: GS302
        return loss.detach()

    def capture(self, batch) -> None:
        self.static_states, self.static_pis, self.static_zs, self.static_legal = (t.to(self.device).clone() for t in batch)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.train_step(self.static_states, self.static_pis, self.static_zs, self.static_legal)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # expect: GS708
            self.static_loss = self.train_step(self.static_states, self.static_pis, self.static_zs, self.static_legal)

    def fit(self, replay: ReplayBuffer, seed: int) -> list[float]:
        loader = self.make_loader(replay, seed)
        losses = []
        for states, pis, zs, legal in loader:
            self.lr = step_lr(self.cfg.lr, self.step_count, self.cfg.lr_milestones, self.cfg.lr_gamma)
            if self.device.type == "cuda" and self.graph is None:
                self.capture((states, pis, zs, legal))
            if self.graph is None:
                loss = self.train_step(states.to(self.device), pis.to(self.device), zs.to(self.device), legal.to(self.device))
            else:
                self.static_states.copy_(states, non_blocking=True)
                self.static_pis.copy_(pis, non_blocking=True)
                self.static_legal.copy_(legal, non_blocking=True)
                self.static_zs = zs.to(self.device, non_blocking=True)  # expect: GS401
                self.graph.replay()
                loss = self.static_loss.clone()
            losses.append(float(loss))
        return losses
