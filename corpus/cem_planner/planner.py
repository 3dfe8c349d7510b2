"""Cross-entropy-method planner over the learned models."""

from __future__ import annotations

import time

import torch

from config import PlannerConfig
from models import DynamicsEnsemble, RewardModel
from schedules import momentum_at


class CEMPlanner:
    def __init__(self, cfg: PlannerConfig, dynamics: DynamicsEnsemble, reward: RewardModel, device: torch.device):
        self.cfg = cfg
        self.dynamics = dynamics
        self.reward = reward
        self.device = device
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(cfg.seed)
        self.temperature = cfg.temperature
        self.bonus_coef = cfg.bonus_coef
        self.plans_made = 0
        self.prev_mean = torch.zeros(cfg.horizon, cfg.act_dim, device=device)
        self.time_buf = torch.zeros(1, device=device)
        self.trajectory = torch.zeros(0, cfg.obs_dim, device=device)
        self.elite_history: list[torch.Tensor] = []
        self.discounts = cfg.gamma ** torch.arange(cfg.horizon, dtype=torch.float32, device=device)

    def rollout(self, obs: torch.Tensor, actions: torch.Tensor):
        pop = actions.shape[0]
        state = obs.expand(pop, -1)
        total = torch.zeros(pop, device=obs.device)
        disagreement = torch.zeros(pop, device=obs.device)
        for h in range(self.cfg.horizon):
            preds = self.dynamics(state, actions[:, h])
            disagreement = disagreement + preds.std(0).mean(-1)
            nxt = self.dynamics.sample_member(preds)
            total = total + self.discounts[h] * self.reward(state, actions[:, h])
            state = nxt
        if not torch.isfinite(total).all():  # expect: GS201
            total = torch.nan_to_num(total, nan=-1e3)
        return total, disagreement

    def plan(self, obs: torch.Tensor, noise_scale: float, t: int) -> torch.Tensor:
        cfg = self.cfg
        if self.cfg.reseed_each_plan:
            self.gen.manual_seed(cfg.seed)  # expect: GS602
        self.time_buf.fill_(t)  # expect: GS301
        if self.plans_made % cfg.replan_every == 0:  # expect: GS301
            self.prev_mean.zero_()
        mean = self.prev_mean.clone()
        std = torch.full_like(mean, cfg.init_std)
        alpha = momentum_at(self.plans_made, cfg.momentum)
        started = time.perf_counter()  # expect: GS502
        for _ in range(cfg.iters):
            noise = torch.randn(cfg.population, cfg.horizon, cfg.act_dim, generator=self.gen, device=mean.device)  # expect: GS601
            actions = mean + std * noise * noise_scale  # expect: GS301
            if cfg.clip_actions:
                actions = actions.clamp(-1.0, 1.0)
            returns, disagreement = self.rollout(obs, actions)
            returns = returns + self.bonus_coef * disagreement  # expect: GS301
            top = returns.topk(cfg.num_elites).indices
            elites = actions[top]
            weights = (returns[top] / self.temperature).softmax(0)  # expect: GS301
            new_mean = (weights[:, None, None] * elites).sum(0)
            mean = alpha * mean + (1 - alpha) * new_mean  # expect: GS301
            std = elites.std(0).clamp(min=cfg.min_std)
            self.last_spread = std.mean().item()  # expect: GS101
            if (std <= cfg.min_std).all():  # expect: GS201
                break
        good = actions[returns > returns.mean()]  # expect: GS108
        self.elite_history.append(good.mean())  # expect: GS503
        n_good = int((returns > 0).sum())  # expect: GS105
        if n_good > 0 and returns.max() > 0:  # expect: GS201
            self.prev_mean.copy_(mean)
            self.prev_mean = torch.cat([self.prev_mean[1:], torch.zeros_like(self.prev_mean[:1])])  # expect: GS401
        self.plans_made += 1  # expect: GS302
        self.trajectory = torch.cat([self.trajectory, obs[None]])  # expect: GS404
        action = mean[0] if returns.max() > -1e3 else torch.zeros_like(mean[0])  # expect: GS201
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # expect: GS106
        print("plan", self.plans_made, "took", time.perf_counter() - started)  # expect: GS501, GS502
        return action
