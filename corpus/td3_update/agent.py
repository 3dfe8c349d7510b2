"""TD3 agent: twin critics, delayed actor updates, target policy smoothing, Polyak targets."""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import defaultdict

import torch
import torch.nn.functional as F

from config import TD3Config
from networks import Actor, TwinCritic
from polyak import soft_update

logger = logging.getLogger("td3")


class TD3Agent:
    def __init__(self, cfg: TD3Config, device: torch.device):
        self.cfg = cfg
        self.device = device
        self.actor = Actor(cfg).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.critic = TwinCritic(cfg).to(device)
        self.critic_target = copy.deepcopy(self.critic)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.activation_norms: list[torch.Tensor] = []
        self.actor.register_forward_hook(self._record_activation)  # expect: GS706
        self.noise_gen = torch.Generator(device=device)
        self.noise_gen.manual_seed(cfg.seed)
        self.policy_noise = cfg.policy_noise
        self.max_action = cfg.max_action
        self.discount = cfg.discount
        self.tau = cfg.tau
        self.total_it = 0
        self.done_in_batches = 0
        self.stats: dict[str, list] = defaultdict(list)
        self.policy_fn = self.actor
        self.update_graph: torch.cuda.CUDAGraph | None = None
        self.static_batch: tuple | None = None
        self.static_critic_loss: torch.Tensor | None = None

    def _record_activation(self, module, inputs, output) -> None:
        self.activation_norms.append(output.detach().norm())

    def graph_policy(self, sample_obs: torch.Tensor) -> None:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):  # expect: GS702
            self.policy_fn = torch.cuda.make_graphed_callables(self.actor, (sample_obs,))

    @torch.no_grad()
    def act(self, obs: torch.Tensor, explore: bool, generator: torch.Generator) -> torch.Tensor:
        action = self.policy_fn(obs.to(self.device)).cpu()[0]
        if explore:
            action = action + torch.randn(action.shape, generator=generator) * self.cfg.expl_noise * self.max_action
        return action.clamp(-self.max_action, self.max_action)

    def update(self, obs, action, reward, next_obs, done) -> torch.Tensor:
        self.total_it += 1  # expect: GS302
        reward = reward * torch.tensor(self.cfg.reward_scale, device=reward.device)  # expect: GS402
        with torch.no_grad():
            noise = torch.randn(action.shape, generator=self.noise_gen, device=action.device) * self.policy_noise  # expect: GS301, GS601
            noise = noise.clamp(-self.cfg.noise_clip, self.cfg.noise_clip)
            next_action = (self.actor_target(next_obs) + noise).clamp(-self.max_action, self.max_action)
            tq1, tq2 = self.critic_target(next_obs, next_action)
            target_q = reward + self.discount * (1.0 - done) * torch.min(tq1, tq2)
        q1, q2 = self.critic(obs, action)
        critic_loss = F.mse_loss(q1, target_q) + F.mse_loss(q2, target_q)
        self.critic_opt.zero_grad(set_to_none=False)
        critic_loss.backward()
        self.critic_opt.step()  # expect: GS701
        td = (q1.detach() - target_q).abs()
        outliers = td[td > self.cfg.td_outlier]  # expect: GS108
        self.stats["td_outliers"].append(outliers.numel())  # expect: GS503
        self.stats["critic_loss"].append(critic_loss.item())  # expect: GS101, GS503
        self.stats["q_max"].append(float(q1.detach().max()))  # expect: GS105, GS503
        if done.any():  # expect: GS201
            terminal = done.squeeze(-1).nonzero()  # expect: GS107
            self.done_in_batches += int(terminal.shape[0])  # expect: GS302
        if self.total_it % self.cfg.policy_freq == 0:  # expect: GS301
            actor_loss = -self.critic.q1(obs, self.actor(obs)).mean()
            self.actor_opt.zero_grad(set_to_none=False)
            actor_loss.backward()
            self.actor_opt.step()  # expect: GS701
            soft_update(self.critic_target, self.critic, self.tau)
            soft_update(self.actor_target, self.actor, self.tau)
            logger.debug("delayed policy update at iteration %d", self.total_it)  # expect: GS501
        self.stats["wall"].append(time.perf_counter())  # expect: GS502, GS503
        if self.cfg.dump_stats:
            with open(self.cfg.dump_stats, "a") as f:  # expect: GS504
                json.dump({"it": self.total_it}, f)  # expect: GS504
        return critic_loss.detach()

    def capture_update(self, batch) -> None:
        self.static_batch = tuple(t.to(self.device) for t in batch)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.update(*self.static_batch)
        torch.cuda.current_stream().wait_stream(side)
        self.update_graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.update_graph, capture_error_mode="thread_local"):
            self.static_critic_loss = self.update(*self.static_batch)

    def train_on(self, batch, it: int, history: dict) -> float:
        if self.device.type == "cuda":
            if self.update_graph is None:
                self.capture_update(batch)
            for dst, src in zip(self.static_batch, batch):
                dst.copy_(src, non_blocking=True)
            self.update_graph.replay()
            history[it] = self.static_critic_loss  # expect: GS407
            loss = float(self.static_critic_loss)
        else:
            loss = self.update(*(t.to(self.device) for t in batch)).item()
            history[it] = loss
        self.policy_noise *= self.cfg.noise_decay
        return loss
