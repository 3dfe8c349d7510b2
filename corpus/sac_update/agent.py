"""Soft Actor-Critic learner with automatic entropy tuning."""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict

import torch
import torch.nn.functional as F

from config import SACConfig
from networks import Actor, SoftQNetwork, polyak_update
from replay import ReplayBuffer


class ScalarWriter:
    """Minimal stand-in for a TensorBoard SummaryWriter (keeps scalars in memory)."""

    def __init__(self) -> None:
        self.scalars: dict[str, list[tuple[int, float]]] = defaultdict(list)

    def add_scalar(self, tag: str, value, step: int) -> None:
        self.scalars[tag].append((step, float(value)))  # expect: GS503


class SACAgent:
    def __init__(self, cfg: SACConfig, replay: ReplayBuffer, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.replay = replay
        self.actor = Actor(cfg).to(device)
        self.qf1, self.qf2 = SoftQNetwork(cfg).to(device), SoftQNetwork(cfg).to(device)
        self.qf1_target, self.qf2_target = copy.deepcopy(self.qf1), copy.deepcopy(self.qf2)
        self.q_optimizer = torch.optim.Adam(list(self.qf1.parameters()) + list(self.qf2.parameters()), lr=cfg.q_lr, fused=True, capturable=True)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.policy_lr, fused=True, capturable=True)
        self.target_entropy = -float(cfg.act_dim)
        self.log_alpha = torch.full((1,), float(torch.log(torch.tensor(cfg.init_alpha))), device=device, requires_grad=True)
        self.a_optimizer = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr)
        self.reward_var = torch.ones((), device=device)
        self.num_updates = 0
        self.writer = ScalarWriter()
        self.metrics: dict[str, list[torch.Tensor]] = defaultdict(list)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static_out: dict[str, torch.Tensor] = {}

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        action, _, mean_action = self.actor.get_action(obs.to(self.device).unsqueeze(0))
        return (mean_action if deterministic else action).squeeze(0).cpu()

    def critic_loss(self, batch: dict[str, torch.Tensor], alpha: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            next_action, next_log_pi, _ = self.actor.get_action(batch["next_obs"])
            min_q_next = torch.min(self.qf1_target(batch["next_obs"], next_action), self.qf2_target(batch["next_obs"], next_action))
            min_q_next = min_q_next - alpha * next_log_pi
            rewards = batch["rewards"] * self.cfg.reward_scale / self.reward_var.sqrt()
            next_q = rewards + (1 - batch["dones"]) * self.cfg.gamma * min_q_next
        qf1_a = self.qf1(batch["obs"], batch["actions"])
        qf2_a = self.qf2(batch["obs"], batch["actions"])
        return F.mse_loss(qf1_a, next_q), F.mse_loss(qf2_a, next_q), qf1_a.detach().mean()

    def update(self, step: int) -> dict[str, torch.Tensor]:
        batch = self.replay.sample(self.cfg.batch_size)
        self.reward_var = 0.99 * self.reward_var + 0.01 * batch["rewards"].var()  # expect: GS401
        alpha = self.log_alpha.exp().item()  # expect: GS101
        qf1_loss, qf2_loss, q_mean = self.critic_loss(batch, alpha)
        qf_loss = qf1_loss + qf2_loss
        self.q_optimizer.zero_grad()
        qf_loss.backward()
        self.q_optimizer.step()

        actor_loss = alpha_loss = torch.zeros((), device=self.device)
        if step % self.cfg.policy_frequency == 0:  # expect: GS301
            for _ in range(self.cfg.policy_frequency):
                pi, log_pi, _ = self.actor.get_action(batch["obs"])
                min_q_pi = torch.min(self.qf1(batch["obs"], pi), self.qf2(batch["obs"], pi))
                actor_loss = (alpha * log_pi - min_q_pi).mean()
                self.actor_optimizer.zero_grad()
                actor_loss.backward()
                self.actor_optimizer.step()
                if self.cfg.autotune:
                    with torch.no_grad():
                        _, log_pi, _ = self.actor.get_action(batch["obs"])
                    alpha_loss = (-self.log_alpha.exp() * (log_pi + self.target_entropy)).mean()
                    self.a_optimizer.zero_grad()
                    alpha_loss.backward()
                    self.a_optimizer.step()  # expect: GS701
                    alpha = self.log_alpha.exp().item()  # expect: GS101

        if step % self.cfg.target_network_frequency == 0:  # expect: GS301
            polyak_update(self.qf1, self.qf1_target, self.cfg.tau)
            polyak_update(self.qf2, self.qf2_target, self.cfg.tau)
        if torch.equal(self.qf1.net[0].weight, self.qf2.net[0].weight):  # expect: GS109
            warnings.warn("twin critics have collapsed to the same weights")  # expect: GS501
        if qf_loss > 1e3 or not torch.isfinite(actor_loss):  # expect: GS201
            warnings.warn("critic diverging: qf_loss=%s" % qf_loss)  # expect: GS104, GS501
        self.num_updates += 1  # expect: GS302
        out = {"qf_loss": qf_loss.detach() / 2.0, "actor_loss": actor_loss.detach(), "alpha_loss": alpha_loss.detach(), "q_mean": q_mean}
        for name, value in out.items():
            self.metrics[name].append(value)  # expect: GS503
        self.writer.add_scalar("losses/alpha", alpha, self.num_updates)  # expect: GS501
        self.writer.add_scalar("losses/qf_loss", float(qf_loss), self.num_updates)  # expect: GS105, GS501
        if torch.cuda.is_available():
            out["max_mem_mb"] = torch.full((), torch.cuda.max_memory_allocated() / 2**20, device=self.device)  # expect: GS405
        return out

    def capture(self, step: int) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.update(step)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.graph.capture_begin()
        self.static_out = self.update(step)
        self.graph.capture_end()
