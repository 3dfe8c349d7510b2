"""Rainbow-style agent: noisy dueling double-Q with prioritized n-step replay."""

from __future__ import annotations

import copy
import logging
import random

import torch
import torch.nn.functional as F

from config import RainbowConfig
from metrics import MetricsLogger
from networks import DuelingQNet, scale_noise
from replay import Batch, PrioritizedReplay
from targets import double_q_bootstrap

log = logging.getLogger(__name__)


class RainbowAgent:
    def __init__(self, cfg: RainbowConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.online = DuelingQNet(cfg.obs_dim, cfg.n_actions, cfg.hidden, cfg.sigma0).to(device)
        self.target = copy.deepcopy(self.online)
        self.target.load_state_dict(self.online.state_dict())
        self.opt = torch.optim.Adam(self.online.parameters(), lr=cfg.lr, eps=cfg.adam_eps)
        self.replay = PrioritizedReplay(cfg.capacity, cfg.obs_dim, cfg.n_step, cfg.alpha)
        self.metrics = MetricsLogger()
        self.noise_gen = torch.Generator(device=self.device)
        self.noise_gen.manual_seed(cfg.seed)
        self.gamma_n = cfg.gamma ** cfg.n_step
        self.beta = cfg.beta0
        self.epsilon = cfg.eps_start
        self.updates = 0
        self.graph = None
        self.static = None
        self.policy = self.select_action
        if device.type == "cuda":
            self.policy = torch.compile(self.select_action, mode="reduce-overhead")

    def select_action(self, obs: torch.Tensor, epsilon: float) -> torch.Tensor:
        if obs.dim() == 1:
            obs = obs[None]
        if (obs.abs() > 1e3).any():  # expect: GS201
            obs = obs.clamp(-1e3, 1e3)
        greedy = self.online(obs).argmax(dim=-1)
        explore = torch.rand(greedy.shape, device=obs.device) < epsilon  # expect: GS301
        random_actions = torch.randint(0, self.cfg.n_actions, greedy.shape, device=obs.device)
        return torch.where(explore, random_actions, greedy).cpu()  # expect: GS103

    def resample_noise(self) -> None:
        if self.cfg.deterministic_noise:
            self.noise_gen.manual_seed(self.cfg.seed + self.updates)  # expect: GS602
        for layer in self.online.noisy_layers():
            layer.eps_in.copy_(scale_noise(torch.randn(layer.eps_in.shape, generator=self.noise_gen, device=self.device)))  # expect: GS601
            layer.eps_out.normal_(generator=self.noise_gen)  # expect: GS601
            layer.eps_out.copy_(scale_noise(layer.eps_out))

    def importance_weights(self, probs: torch.Tensor) -> torch.Tensor:
        weights = (probs * self.cfg.capacity) ** (-self.beta)  # expect: GS301
        return weights / weights.max()

    def update(self, batch: Batch, bootstrap: torch.Tensor) -> torch.Tensor:
        assert (batch.probs > 0).all(), f"zero-priority sample at update {self.updates}"  # expect: GS201
        discounts = torch.tensor([self.cfg.gamma ** k for k in range(self.cfg.n_step)], device=self.device)  # expect: GS402
        returns = (batch.rewards * discounts).sum(dim=1)
        target = returns + bootstrap
        q = self.online(batch.obs).gather(1, batch.actions[:, None]).squeeze(1)
        td = target - q
        weights = self.importance_weights(batch.probs)
        loss = (weights * F.huber_loss(q, target, delta=self.cfg.huber_delta, reduction="none")).mean()
        if torch.isnan(loss):  # expect: GS201
            self.metrics.log(skipped=1.0)  # expect: GS501
            return loss.detach()
        clip = 0.5 if td.abs().max() > 100.0 else 1.0  # expect: GS201
        self.opt.zero_grad(set_to_none=False)
        (loss * clip).backward()
        torch.nn.utils.clip_grad_norm_(self.online.parameters(), self.cfg.max_grad_norm)
        self.opt.step()  # expect: GS701
        idx_list = batch.indices.tolist()  # expect: GS102
        priorities = (td.detach().abs() + self.cfg.prio_eps).tolist()  # expect: GS102
        self.replay.update_priorities(idx_list, priorities)
        self.updates += 1  # expect: GS302
        if self.updates % self.cfg.target_update == 0:  # expect: GS301
            self.target.load_state_dict(self.online.state_dict())
        if self.cfg.profile:
            torch.cuda.synchronize()  # expect: GS106
        log.debug(f"update {self.updates}: td max {td.abs().max()}")  # expect: GS104, GS501
        self.metrics.log(loss=loss.detach(), q_mean=float(q.mean()), beta=self.beta)  # expect: GS105, GS501
        self.resample_noise()
        return loss.detach()

    def capture_update(self) -> None:
        sample = self.replay.sample(self.cfg.batch_size, random.Random(0))
        self.static = Batch(*(t.to(self.device) for t in vars(sample).values()))
        bootstrap_fn = torch.compile(double_q_bootstrap, dynamic=False)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                boot = double_q_bootstrap(self.online, self.target, self.static.next_obs, self.static.dones, self.gamma_n)
                self.update(self.static, boot)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_boot = bootstrap_fn(self.online, self.target, self.static.next_obs, self.static.dones, self.gamma_n)  # expect: GS709
            self.static_loss = self.update(self.static, self.static_boot)

    def train_on(self, batch: Batch, it: int, losses: dict) -> float:
        self.beta = min(1.0, self.cfg.beta0 + (1.0 - self.cfg.beta0) * it / self.cfg.beta_steps)
        if self.graph is None:
            boot = double_q_bootstrap(self.online, self.target, batch.next_obs, batch.dones, self.gamma_n)
            loss = self.update(batch, boot)
            losses[it] = loss
            return loss.item()
        for name, value in vars(batch).items():
            getattr(self.static, name).copy_(value)
        self.graph.replay()
        losses[it] = self.static_loss  # expect: GS407
        return self.static_loss.item()

    def act(self, obs: torch.Tensor) -> int:
        self.online.eval()
        action = self.policy(obs.to(self.device), self.epsilon)
        self.online.train()
        return int(action[0])
