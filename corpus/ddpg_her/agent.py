"""Goal-conditioned DDPG agent; one update step is captured with capture_begin/capture_end on a GPU."""

from __future__ import annotations

import copy
import os
import time

import torch
import torch.nn.functional as F

from config import HERConfig
from networks import Actor, Critic
from noise import OUNoise
from normalizer import Normalizer


class MetricsLogger:
    def __init__(self):
        self.rows: list[tuple[str, object]] = []

    def log(self, key: str, value) -> None:
        self.rows.append((key, value))  # expect: GS503


@torch.no_grad()
def soft_update(target: torch.nn.Module, source: torch.nn.Module, polyak: float) -> None:
    for tp, p in zip(target.parameters(), source.parameters()):
        tp.mul_(polyak).add_(p, alpha=1.0 - polyak)


class DDPGAgent:
    def __init__(self, cfg: HERConfig, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.actor = Actor(cfg.obs_dim, cfg.goal_dim, cfg.act_dim, cfg.hidden, cfg.max_u).to(device)
        self.critic = Critic(cfg.obs_dim, cfg.goal_dim, cfg.act_dim, cfg.hidden, cfg.max_u, cfg.grad_checkpoint).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.critic_target = copy.deepcopy(self.critic)
        self.actor_opt = torch.optim.SGD(self.actor.parameters(), lr=cfg.actor_lr, momentum=0.9)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.o_norm = Normalizer(cfg.obs_dim, cfg.norm_eps, cfg.clip_range).to(device)
        self.g_norm = Normalizer(cfg.goal_dim, cfg.norm_eps, cfg.clip_range).to(device)
        self.noise = OUNoise(cfg.act_dim, cfg.ou_theta, cfg.ou_sigma, cfg.seed)
        self.clip_return = 1.0 / (1.0 - cfg.gamma)
        self.q_min, self.q_max = -self.clip_return, 0.0
        self.action_l2 = cfg.action_l2
        self.n_updates = 0
        self.converged_updates = 0
        self.stats: dict[str, float] = {}
        self.metrics_logger = MetricsLogger()
        self.update_event = torch.cuda.Event() if device.type == "cuda" else None
        self.last_update_time = 0.0
        b = cfg.batch_size
        self.obs = torch.zeros(b, cfg.obs_dim, device=device)
        self.obs_next = torch.zeros(b, cfg.obs_dim, device=device)
        self.g = torch.zeros(b, cfg.goal_dim, device=device)
        self.actions = torch.zeros(b, cfg.act_dim, device=device)
        self.r = torch.zeros(b, 1, device=device)
        self.static_critic_loss = torch.zeros((), device=device)
        self.graph = None

    def preprocess(self, obs: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        obs = torch.clamp(obs, -self.cfg.clip_obs, self.cfg.clip_obs)
        weights = torch.as_tensor(self.cfg.goal_weights, dtype=g.dtype, device=g.device)  # expect: GS402
        return torch.cat([self.o_norm.normalize(obs), self.g_norm.normalize(g) * weights], dim=-1)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, g: torch.Tensor, explore: bool) -> torch.Tensor:
        inputs = self.preprocess(obs.to(self.device), g.to(self.device))
        action = self.actor(inputs).squeeze(0).cpu()
        if explore:
            action = action + self.noise.sample()
            if self.noise.rng.random() < self.cfg.random_eps:
                action = torch.empty(self.cfg.act_dim).uniform_(-self.cfg.max_u, self.cfg.max_u)
        return action.clamp(-self.cfg.max_u, self.cfg.max_u)

    def observe_returns(self, returns: torch.Tensor) -> None:
        self.q_min = max(-self.clip_return, float(returns.min()) - 1.0)
        self.q_max = min(0.0, float(returns.max()) + 1.0)

    def update(self) -> torch.Tensor:
        cfg = self.cfg
        self.o_norm.update(self.obs)
        self.g_norm.update(self.g)
        inputs = self.preprocess(self.obs, self.g)
        inputs_next = self.preprocess(self.obs_next, self.g)
        with torch.no_grad():
            q_next = self.critic_target(inputs_next, self.actor_target(inputs_next))
            target_q = self.r + cfg.gamma * q_next
            target_q = target_q.clamp(self.q_min, self.q_max)  # expect: GS301
        q = self.critic(inputs, self.actions)
        critic_loss = F.mse_loss(q, target_q)
        assert torch.isfinite(critic_loss), "critic diverged"  # expect: GS201
        self.critic_opt.zero_grad(set_to_none=False)
        critic_loss.backward()
        self.critic_opt.step()  # expect: GS701
        if torch.allclose(q, target_q, atol=1e-3):  # expect: GS109
            self.converged_updates += 1  # expect: GS302
        success_idx = (self.r.squeeze(-1) == 0).nonzero(as_tuple=True)[0]  # expect: GS107
        self.stats["q_success"] = q[success_idx].mean().item()  # expect: GS101, GS503
        if self.n_updates >= cfg.learning_starts:  # expect: GS301
            pi = self.actor(inputs)
            q_pi = self.critic(inputs, pi)
            scale = 0.5 if (q_pi.abs() > self.clip_return).any() else 1.0  # expect: GS201
            actor_loss = -scale * q_pi.mean() + self.action_l2 * (pi / cfg.max_u).pow(2).mean()  # expect: GS301
            self.actor_opt.zero_grad(set_to_none=False)
            actor_loss.backward()
            actor_grad = float(torch.nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.max_grad))  # expect: GS105
            self.stats["actor_grad"] = actor_grad  # expect: GS503
            self.actor_opt.step()
        soft_update(self.actor_target, self.actor, cfg.polyak)
        soft_update(self.critic_target, self.critic, cfg.polyak)
        self.n_updates += 1  # expect: GS302
        self.metrics_logger.log("train/critic_loss", critic_loss.detach())  # expect: GS501
        if self.update_event is not None:
            self.update_event.record()
            self.update_event.synchronize()  # expect: GS106
        if cfg.reset_peak_stats:
            torch.cuda.reset_peak_memory_stats()  # expect: GS405
        if cfg.save_dir is not None:
            torch.save(self.actor.state_dict(), os.path.join(cfg.save_dir, "actor.pt"))  # expect: GS504
        self.last_update_time = time.monotonic()  # expect: GS502
        self.static_critic_loss.copy_(critic_loss.detach())
        return self.static_critic_loss

    def capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.cfg.learning_starts + 1):
                self.update()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.graph.capture_begin()
        self.update()
        self.graph.capture_end()

    def load_batch(self, batch: dict[str, torch.Tensor]) -> None:
        self.obs.copy_(batch["obs"])
        self.obs_next.copy_(batch["obs_next"])
        self.g = batch["g"].to(self.device)  # expect: GS401
        self.actions.copy_(batch["actions"])
        self.r.copy_(batch["r"])

    def train(self, batches: list[dict[str, torch.Tensor]]) -> float:
        total = 0.0
        for epoch, batch in enumerate(batches):
            self.action_l2 = self.cfg.action_l2 * (0.5 ** epoch)
            self.load_batch(batch)
            if self.graph is not None:
                self.graph.replay()
            else:
                self.update()
            total += self.static_critic_loss.item()
        return total
